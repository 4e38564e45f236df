import ArgumentParser

/// The scenarios `load --scenario` knows.
enum LoadScenario: String, CaseIterable, ExpressibleByArgument {
    /// Seeds designers (hours, posts) and customers (follows, reservations, chat rooms) through public
    /// RPCs, then drives the app's mix across the four services, with live chat streams.
    case yediMix = "yedi-mix"
}

/// Where a scenario's services are and how much it seeds.
struct ScenarioOptions: ParsableArguments {
    @Option(help: ArgumentHelp("AccountService, HOST:PORT.", valueName: "host:port"))
    var account = Address(argument: "127.0.0.1:7001")!

    @Option(help: ArgumentHelp("ContentService, HOST:PORT.", valueName: "host:port"))
    var content = Address(argument: "127.0.0.1:7002")!

    @Option(help: ArgumentHelp("BookingService, HOST:PORT.", valueName: "host:port"))
    var booking = Address(argument: "127.0.0.1:7003")!

    @Option(help: ArgumentHelp("ChatService, HOST:PORT.", valueName: "host:port"))
    var chat = Address(argument: "127.0.0.1:7004")!

    /// Two designers and three customers make ten sign-up calls: what AccountService allows one
    /// connection a minute by default.
    @Option(help: ArgumentHelp("Designers to sign up before the run.", valueName: "n"))
    var designers = 2

    @Option(help: ArgumentHelp("Customers to sign up before the run, each with a chat room.", valueName: "n"))
    var customers = 3

    @Option(help: ArgumentHelp("Posts each designer makes before the run (each with a photo).", valueName: "n"))
    var posts = 3

    @Option(
        help: ArgumentHelp(
            "Live chat streams (Subscribe) open during the run, spread over the users (at most "
                + "\(LiveStreams.perUserLimit) per user); send→deliver is measured to them.",
            valueName: "n"))
    var streams = 0

    @Option(
        help: ArgumentHelp(
            "AccountService's development mailbox, for the sign-up codes (default: data/account/sent-mail beside "
                + "the dev PKI's deploy/).",
            valueName: "folder"))
    var sentMail: String?

    func validate() throws {
        if !(1...100).contains(designers) { throw ValidationError("--designers must be between 1 and 100") }
        if !(1...1000).contains(customers) { throw ValidationError("--customers must be between 1 and 1000") }
        // posts.day: a designer makes at most 30 posts a Seoul day.
        if !(1...30).contains(posts) { throw ValidationError("--posts must be between 1 and 30") }
        if streams < 0 { throw ValidationError("--streams must be 0 or more") }
        let users = designers + customers
        if streams > LiveStreams.perUserLimit * users {
            let needed = (streams + LiveStreams.perUserLimit - 1) / LiveStreams.perUserLimit
            throw ValidationError(
                "--streams \(streams) needs at least \(needed) users (ChatService allows "
                    + "\(LiveStreams.perUserLimit) streams per user), and --designers plus --customers make "
                    + "\(users): raise --customers to \(needed - designers) or more")
        }
    }
}
