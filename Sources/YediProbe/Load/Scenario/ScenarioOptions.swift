import ArgumentParser

/// The scenarios `load --scenario` knows.
enum LoadScenario: String, CaseIterable, ExpressibleByArgument {
    /// Seeds designers and customers through public RPCs, then drives a mix of reads and chat messages
    /// across the four services.
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

    @Option(
        help: ArgumentHelp(
            "AccountService's development mailbox, for the sign-up codes (default: data/account/sent-mail beside "
                + "the dev PKI's deploy/).",
            valueName: "folder"))
    var sentMail: String?

    func validate() throws {
        if !(1...100).contains(designers) { throw ValidationError("--designers must be between 1 and 100") }
        if !(1...1000).contains(customers) { throw ValidationError("--customers must be between 1 and 1000") }
    }
}
