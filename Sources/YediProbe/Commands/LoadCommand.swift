import ArgumentParser
import LoadGenerator
import RPCCore

/// `yedi-probe load HOST:PORT svc/Method [JSON | @file | -]`: many calls of one unary method, at once
/// or at a fixed rate, summed up as calls/s, statuses and latency percentiles (ghz's job, for Yedi).
struct LoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Calls a unary method many times and reports calls/s, statuses and latency percentiles.",
        discussion: """
            Closed model (the default): --concurrency workers each call again as soon as their previous \
            call returns, over --connections TLS connections, for --duration seconds (default \
            \(LoadCommand.defaultDuration.formatted)) or --total calls. Open model (--rate): calls are due \
            at a fixed pace whether or not earlier ones have returned, and latency is measured from when \
            each call was due, so a slow server shows up as latency instead of fewer calls; give enough \
            --concurrency for rate × latency.

            The request is JSON as for `call`; its string values may hold placeholders, expanded for each \
            call: {{seq}} (0, 1, 2, …), {{uuid}}, {{random:a,b,c}} (one of the values). Integer fields \
            take strings, so {"count": "{{seq}}"} works.

            Prints the calls per second, the count of each status (OK or the gRPC code) and latency \
            percentiles (p50, p90, p99, p99.9, max) from an HDR histogram; --json prints one JSON object \
            instead (latencies in ms). A progress line goes to stderr about once a second. Ctrl-C stops \
            the run, prints the report so far and exits 130. Failed calls are counted, not fatal: the \
            exit status is 0 once the run could connect.

            --scenario yedi-mix loads the whole system instead of one method: it seeds designers (hours, \
            posts with photos) and customers (a follow, a reservation, a chat room) through the public \
            RPCs (reading the sign-up codes from AccountService's development mailbox, --sent-mail), then \
            makes calls picked at random by weight across the four services (search and profiles; feeds, \
            posts and likes; free slots, schedules and reservations; chat messages sent, read and marked \
            read). The report adds a line per method. --streams N keeps N live chat streams open during \
            the run (at most 16 per user) and reports send→deliver: from each send's start to its arrival \
            at each stream of the room's members. Services default to deploy/start.sh's ports \
            (127.0.0.1:7001 to 7004).

            Examples:
              yedi-probe load 127.0.0.1:7001 yedi.health.Health/Check '{}' \\
                --duration 3 --json
              yedi-probe load localhost:4433 yedi.echo.Echo/Echo \\
                '{"text": "call {{seq}}"}' -n 10000 -c 32 --connections 4
              yedi-probe load 127.0.0.1:7001 yedi.account.AccountService/GetUser \\
                '{"userId": "{{random:u-1,u-2,u-3}}"}' --rate 500 --token "$TOKEN"
              yedi-probe load --scenario yedi-mix --duration 30 -c 20 --streams 40
            """
    )

    static let defaultDuration: Double = 10

    @Argument(
        help: ArgumentHelp(
            "The server, HOST:PORT; or a service's replicas, HOST:PORT,HOST:PORT,… (calls go to those ready, "
                + "round robin, skipping one that answers UNAVAILABLE).",
            valueName: "host:port"))
    var address: Address?

    @Argument(help: ArgumentHelp("The method: package.Service/Method (unary).", valueName: "method"))
    var method: String?

    @Argument(
        help: ArgumentHelp(
            "The request: JSON text (with placeholders), @FILE to read it from a file, or - to read stdin.",
            valueName: "request"
        )
    )
    var request: String = "{}"

    @Option(
        name: [.customShort("c"), .long],
        help: ArgumentHelp("Calls in flight at most (workers).", valueName: "n"))
    var concurrency: Int = 10

    @Option(help: ArgumentHelp("TLS connections the calls are spread over.", valueName: "n"))
    var connections: Int = 1

    @Option(
        help: ArgumentHelp(
            "Seconds to run (default: \(LoadCommand.defaultDuration.formatted) unless --total is given).",
            valueName: "seconds"))
    var duration: Double?

    @Option(name: [.customShort("n"), .long], help: ArgumentHelp("Calls to make in all.", valueName: "calls"))
    var total: Int?

    @Option(
        help: ArgumentHelp(
            "Calls per second, due whether or not earlier calls returned (open model).", valueName: "calls"))
    var rate: Double?

    @Flag(help: "Prints the report as one JSON object (latencies in milliseconds).")
    var json = false

    @Flag(help: "No progress line on stderr.")
    var noProgress = false

    @Option(
        help: ArgumentHelp(
            "A built-in scenario instead of HOST:PORT and a method: yedi-mix seeds designers and customers, "
                + "then drives a mix of calls across the four services.",
            valueName: "name"))
    var scenario: LoadScenario?

    @OptionGroup(title: "Connection Options")
    var connection: ConnectionOptions

    @OptionGroup(title: "Scenario Options (--scenario yedi-mix)")
    var scenarioOptions: ScenarioOptions

    static let maxConcurrency = 10_000
    static let maxConnections = 1_000

    func validate() throws {
        if scenario == nil, address == nil || method == nil {
            throw ValidationError("load needs HOST:PORT and a method (or --scenario yedi-mix)")
        }
        if scenario != nil, address != nil {
            throw ValidationError(
                "--scenario takes no HOST:PORT or method: it finds the services with --account, --content, "
                    + "--booking and --chat")
        }
        if duration != nil, total != nil {
            throw ValidationError("--duration and --total both say when to stop: give one of them")
        }
        if let duration, !(duration > 0 && duration <= 366 * 24 * 3600) {
            throw ValidationError("--duration must be a number of seconds above 0 (and below a year)")
        }
        if let total, total < 1 {
            throw ValidationError("--total must be at least 1")
        }
        if let rate, !(rate > 0 && rate <= 10_000_000) {
            throw ValidationError("--rate must be a number of calls per second above 0 (and at most 10000000)")
        }
        if !(1...Self.maxConcurrency).contains(concurrency) {
            throw ValidationError("--concurrency must be between 1 and \(Self.maxConcurrency)")
        }
        if !(1...Self.maxConnections).contains(connections) {
            throw ValidationError("--connections must be between 1 and \(Self.maxConnections)")
        }
    }

    var plan: LoadPlan {
        let limit: LoadPlan.Limit =
            total.map { .total(UInt64($0)) } ?? .duration(.seconds(duration ?? Self.defaultDuration))
        return LoadPlan(concurrency: concurrency, limit: limit, pacer: rate.map(RatePacer.init(rate:)))
    }

    func run() async throws {
        let progress = noProgress ? nil : ProgressDisplay()
        let report: LoadReport
        if let address, let method {
            report = try await runMethod(address: address, method: method, progress: progress)
        } else {
            let mix = try YediMix(options: scenarioOptions, connection: connection, connections: connections)
            report = try await mix.run(plan: plan, progress: progress)
        }
        Output.line(json ? report.json : report.text)
        if report.interrupted { throw ExitCode(ExitStatus.interrupted) }
    }

    private func runMethod(address: Address, method: String, progress: ProgressDisplay?) async throws -> LoadReport {
        let method = try SchemaCatalog.shared.requireMethod(method)
        let input = RequestInput(argument: request)
        let requests = try LoadRequests(
            template: String(decoding: try input.readText(), as: UTF8.self), schema: method.input,
            source: input.sourceName)
        let session = try LoadSession(
            address: address, method: method, connection: connection, connections: connections)
        return try await session.run(plan: plan, requests: requests, progress: progress)
    }
}

extension Double {
    /// `10`, `2.5`: for help texts.
    fileprivate var formatted: String { LoadReport.decimal(self) }
}
