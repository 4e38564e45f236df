import Foundation
import LoadGenerator
import NIOConcurrencyHelpers
import ProtoBridge
import RPCCore

/// `load --scenario yedi-mix`: the whole system under a plausible mix. It first signs designers and
/// customers up through the public RPCs (SignUp, the code from the development mailbox,
/// CompleteSignUp), gives each designer working hours and each customer a chat room, then makes calls
/// picked at random by weight: designer search and profiles (account), the feed and designer posts
/// (content), free slots and schedules (booking), messages sent and read (chat).
///
/// Users are new on every run (their addresses carry a random run id), so runs do not collide. The
/// access tokens are not refreshed: a run should end within their 15 minutes.
struct YediMix {
    /// One kind of call of the mix.
    struct Operation: Sendable {
        var service: String
        var method: ProbeMethod
        /// Relative frequency.
        var weight: Int
        /// The JSON request and the caller's token, for the seeded cast.
        var request: @Sendable (Cast, inout SystemRandomNumberGenerator, UInt64) -> (json: String, token: String)
    }

    /// The users the run signed up.
    struct Cast: Sendable {
        struct Designer: Sendable {
            var id: String
            var token: String
        }
        struct Customer: Sendable {
            var id: String
            var token: String
            /// Their room with one of the designers.
            var roomID: String
        }
        var designers: [Designer]
        var customers: [Customer]
        /// ListFreeSlots' range: today and the six days after, in Seoul.
        var week: (from: String, to: String)
    }

    let options: ScenarioOptions
    let connection: ConnectionOptions
    let connections: Int
    let configurations: [String: ClientConfiguration]
    let mix: Mix
    let seeder: Seeder

    init(options: ScenarioOptions, connection: ConnectionOptions, connections: Int) throws(ProbeError) {
        self.options = options
        self.connection = connection
        self.connections = connections
        let folder: URL
        if let sentMail = options.sentMail {
            folder = URL(fileURLWithPath: sentMail)
        } else {
            folder = try SentMailbox.devFolder()
        }
        let mailbox = SentMailbox(folder: folder)
        var configurations: [String: ClientConfiguration] = [:]
        for (service, address) in [
            ("account", options.account), ("content", options.content), ("booking", options.booking),
            ("chat", options.chat),
        ] {
            var configuration = try connection.clientConfiguration(target: address.target)
            configuration.connectionsPerTarget = connections
            configurations[service] = configuration
        }
        self.configurations = configurations
        var methods: [String: ProbeMethod] = [:]
        for name in Self.seedingMethods + Self.mixMethods.map(\.method) {
            methods[name] = try SchemaCatalog.shared.requireMethod(name)
        }
        mix = Mix(
            operations: Self.mixMethods.map { entry in
                Operation(
                    service: entry.service, method: methods[entry.method]!, weight: entry.weight,
                    request: entry.request)
            })
        seeder = Seeder(
            designers: options.designers, customers: options.customers, mailbox: mailbox, methods: methods)
    }

    // MARK: The mix

    private static let account = "yedi.account.AccountService/"
    private static let content = "yedi.content.ContentService/"
    private static let booking = "yedi.booking.BookingService/"
    private static let chat = "yedi.chat.ChatService/"

    private static let seedingMethods = [
        account + "SignUp", account + "CompleteSignUp", booking + "UpdateSchedule", chat + "OpenRoom",
    ]

    /// What the mix calls, how often, and with what.
    private static let mixMethods:
        [(
            service: String, method: String, weight: Int,
            request: @Sendable (Cast, inout SystemRandomNumberGenerator, UInt64) -> (json: String, token: String)
        )] = [
            (
                "account", account + "SearchDesigners", 15,
                { cast, random, _ in (#"{"query": "믹스"}"#, cast.customers.randomElement(using: &random)!.token) }
            ),
            (
                "account", account + "GetDesigner", 15,
                { cast, random, _ in
                    (
                        #"{"designerId": "\#(cast.designers.randomElement(using: &random)!.id)"}"#,
                        cast.customers.randomElement(using: &random)!.token
                    )
                }
            ),
            (
                "content", content + "GetFeed", 15,
                { cast, random, _ in ("{}", cast.customers.randomElement(using: &random)!.token) }
            ),
            (
                "content", content + "ListDesignerPosts", 10,
                { cast, random, _ in
                    (
                        #"{"designerId": "\#(cast.designers.randomElement(using: &random)!.id)"}"#,
                        cast.customers.randomElement(using: &random)!.token
                    )
                }
            ),
            (
                "booking", booking + "ListFreeSlots", 15,
                { cast, random, _ in
                    (
                        #"{"designerId": "\#(cast.designers.randomElement(using: &random)!.id)", "from": \#(cast.week.from), "to": \#(cast.week.to)}"#,
                        cast.customers.randomElement(using: &random)!.token
                    )
                }
            ),
            (
                "booking", booking + "GetSchedule", 10,
                { cast, random, _ in
                    (
                        #"{"designerId": "\#(cast.designers.randomElement(using: &random)!.id)"}"#,
                        cast.customers.randomElement(using: &random)!.token
                    )
                }
            ),
            (
                "chat", chat + "SendMessage", 10,
                { cast, random, sequence in
                    let customer = cast.customers.randomElement(using: &random)!
                    return (
                        #"{"roomId": "\#(customer.roomID)", "text": {"text": "안녕하세요 \#(sequence)"}}"#, customer.token
                    )
                }
            ),
            (
                "chat", chat + "ListMessages", 10,
                { cast, random, _ in
                    let customer = cast.customers.randomElement(using: &random)!
                    return (#"{"roomId": "\#(customer.roomID)"}"#, customer.token)
                }
            ),
        ]

    // MARK: Running

    /// Seeds the cast, then runs the plan; the report has a line per method beside the totals.
    func run(plan: LoadPlan, progress: ProgressDisplay?) async throws(ProbeError) -> LoadReport {
        let connectTimeout = connection.connectTimeout
        let interrupts = Interrupts.stream()
        let perMethod = NIOLockedValueBox<[String: LoadTally]>([:])
        let outcome: (tally: LoadTally, elapsed: Duration, interrupted: Bool)
        do {
            outcome = try await ServiceClients.with(configurations, timeout: connection.callTimeout(for: .unary)) {
                clients in
                try await clients.waitUntilReady(timeout: connectTimeout)
                let cast = try await seeder.seed(clients)
                let mix = mix
                let call: LoadRunner.Call = { sequence in
                    var random = SystemRandomNumberGenerator()
                    let operation = mix.pick(using: &random)
                    let (json, token) = operation.request(cast, &random, sequence)
                    let start = ContinuousClock.now
                    let status: String
                    do {
                        _ = try await clients.call(operation.service, operation.method, json, token: token)
                        status = LoadTally.ok
                    } catch let error as RPCError {
                        status = error.code.name
                    } catch {
                        status = StatusCode.unknown.name
                    }
                    let latency = ContinuousClock.now - start
                    perMethod.withLockedValue {
                        $0[operation.method.fullName, default: LoadTally()].record(latency: latency, status: status)
                    }
                    return status
                }
                let show = progress.map { display in { @Sendable (line: ProgressLine) in display.show(line) } }
                defer { progress?.finish() }
                return await LoadSession.interruptible(by: interrupts) {
                    await LoadRunner(plan: plan).run(call: call, progress: show)
                }
            }
        } catch let error as ProbeError {
            throw error
        } catch let error as TLSError {
            throw ProbeError(settingUp: error)
        } catch let error as RPCError {
            throw .rpc(error)
        } catch {
            throw .rpc(RPCError(code: .unknown, message: "\(error)"))
        }
        let target = [options.account, options.content, options.booking, options.chat].map(\.description)
            .joined(separator: ", ")
        return LoadReport(
            method: "yedi-mix", target: target, plan: plan, connections: connections, tally: outcome.tally,
            elapsed: outcome.elapsed, interrupted: outcome.interrupted,
            operations: perMethod.withLockedValue { $0 })
    }

}

/// The operations of the mix and their weights.
struct Mix: Sendable {
    var operations: [YediMix.Operation]

    /// The operation of a call: picked at random by weight.
    func pick(using random: inout SystemRandomNumberGenerator) -> YediMix.Operation {
        var roll = Int.random(in: 0..<operations.reduce(0) { $0 + $1.weight }, using: &random)
        for operation in operations {
            if roll < operation.weight { return operation }
            roll -= operation.weight
        }
        return operations[operations.count - 1]
    }
}

/// Signs the scenario's users up through the public RPCs before the run.
struct Seeder: Sendable {
    typealias Cast = YediMix.Cast

    var designers: Int
    var customers: Int
    var mailbox: SentMailbox
    var methods: [String: ProbeMethod]
    /// Whether the sign-up rate limit was already explained.
    let warned = NIOLockedValueBox(false)

    private static let account = "yedi.account.AccountService/"
    private static let booking = "yedi.booking.BookingService/"
    private static let chat = "yedi.chat.ChatService/"

    /// Signs the designers and customers up (a few at a time: each sign-up hashes a password), sets
    /// the designers' hours and opens each customer's room.
    func seed(_ clients: ServiceClients) async throws -> Cast {
        let run = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        Output.errorLine(
            "yedi-mix: signing up \(designers) designers and \(customers) customers (run \(run))")
        let signedDesigners = try await inBatches(0..<designers) { index in
            try await signUpDesigner(index, run: run, clients)
        }
        let signedCustomers = try await inBatches(0..<customers) { index in
            let user = try await signUp(
                clients, email: "mix-\(run)-c\(index)@example.com",
                json: #"""
                    {"email": "mix-\#(run)-c\#(index)@example.com", "password": "hair2024!", "name": "믹스 고객 \#(index)",
                     "phone": "\#(Self.phone(index + 500))", "gender": "GENDER_FEMALE",
                     "birthDate": {"year": 1995, "month": 4, "day": 12}, "role": "ROLE_CUSTOMER"}
                    """#)
            let designer = signedDesigners[index % signedDesigners.count]
            let room = try await seedCall(
                clients, "chat", Self.chat + "OpenRoom", #"{"designerId": "\#(designer.id)"}"#, token: user.token)
            return Cast.Customer(id: user.id, token: user.token, roomID: try field(["room", "id"], of: room))
        }
        return Cast(designers: signedDesigners, customers: signedCustomers, week: Self.week())
    }

    private func signUpDesigner(_ index: Int, run: String, _ clients: ServiceClients) async throws -> Cast.Designer {
        let user = try await signUp(
            clients, email: "mix-\(run)-d\(index)@example.com",
            json: #"""
                {"email": "mix-\#(run)-d\#(index)@example.com", "password": "scissors99", "name": "믹스 디자이너 \#(index)",
                 "phone": "\#(Self.phone(index))", "gender": "GENDER_MALE", "birthDate": {"year": 1988, "month": 11, "day": 3},
                 "role": "ROLE_DESIGNER",
                 "designer": {"description": "부하 시험", "skills": ["펌"], "rank": "DESIGNER_RANK_PRINCIPAL",
                   "shop": {"name": "믹스 살롱 \#(index)", "phone": "0255551234",
                     "address": {"city": "서울", "district": "강남구 테헤란로", "detail": "\#(index)층"},
                     "latitude": 37.5, "longitude": 127.03}}}
                """#)
        _ = try await seedCall(
            clients, "booking", Self.booking + "UpdateSchedule",
            #"""
            {"schedule": {"openingMinute": 600, "closingMinute": 1200, "timeZone": "Asia/Seoul", "slotMinutes": 60,
              "breaks": [{"startMinute": 780, "endMinute": 840}]}}
            """#, token: user.token)
        return Cast.Designer(id: user.id, token: user.token)
    }

    /// SignUp, the code from the mailbox, CompleteSignUp.
    private func signUp(_ clients: ServiceClients, email: String, json: String) async throws -> (
        id: String, token: String
    ) {
        let started = try await seedCall(clients, "account", Self.account + "SignUp", json, token: nil)
        let verificationID = try field(["verificationId"], of: started)
        let mail = try await mailbox.waitForMessages(to: email, verificationId: verificationID, wait: .seconds(30))
        guard let code = mail.last?.values["code"] else {
            throw ProbeError(
                "yedi-mix: no sign-up code for \(email) in \(mailbox.folder.path) (pass --sent-mail: "
                    + "AccountService's data folder/sent-mail; it must run with its development mail sender)",
                exitCode: ExitStatus.noSuchField)
        }
        let completed = try await seedCall(
            clients, "account", Self.account + "CompleteSignUp",
            #"{"verificationId": "\#(verificationID)", "code": "\#(code)"}"#, token: nil)
        return (try field(["user", "id"], of: completed), try field(["session", "accessToken"], of: completed))
    }

    /// A seeding call: its failure ends the run, saying which step failed. AccountService limits
    /// sign-ups per address and per connection (`--sign-in-rate-per-address`, 20 a minute by default):
    /// when it says so, the call waits the `retry-after` it gives and is made again, for up to 3 minutes.
    private func seedCall(
        _ clients: ServiceClients, _ service: String, _ method: String, _ json: String, token: String?
    ) async throws -> DynamicMessage {
        let giveUp = ContinuousClock.now + .seconds(180)
        while true {
            do {
                return try await clients.call(service, methods[method]!, json, token: token)
            } catch let error as RPCError
                where error.code == .resourceExhausted && ContinuousClock.now < giveUp
            {
                let seconds = error.metadata["retry-after"].flatMap { Int($0) } ?? 5
                if warned.withLockedValue({ warned in
                    defer { warned = true }
                    return !warned
                }) {
                    Output.errorLine(
                        "yedi-mix: \(service) limits sign-ups (\(oneLine(error.message))): waiting as it asks. "
                            + "For larger casts start it with higher --sign-in-rate-per-address and "
                            + "--sign-in-rate-per-connection")
                }
                try await Task.sleep(for: .seconds(min(max(seconds, 1), 60)))
            } catch let error as RPCError {
                var failure = ProbeError.rpc(error)
                failure.message = "yedi-mix could not seed: \(method): \(failure.message)"
                throw failure
            }
        }
    }

    private func field(_ path: [String], of reply: DynamicMessage) throws(ProbeError) -> String {
        try ReplyPrinter.extract(path, from: reply)
    }

    /// Runs `body` for each index, four at a time; results in index order.
    private func inBatches<T: Sendable>(
        _ indices: Range<Int>, _ body: @escaping @Sendable (Int) async throws -> T
    ) async throws -> [T] {
        var results: [Int: T] = [:]
        var next = indices.lowerBound
        try await withThrowingTaskGroup(of: (Int, T).self) { group in
            for _ in 0..<4 where next < indices.upperBound {
                let index = next
                group.addTask { (index, try await body(index)) }
                next += 1
            }
            while let (index, result) = try await group.next() {
                results[index] = result
                if next < indices.upperBound {
                    let index = next
                    group.addTask { (index, try await body(index)) }
                    next += 1
                }
            }
        }
        return indices.map { results[$0]! }
    }

    /// A mobile number per user: 010 and eight digits.
    private static func phone(_ index: Int) -> String {
        "010" + String(format: "%08d", (Int.random(in: 0..<90_000) * 1000 + index) % 100_000_000)
    }

    /// Today and six days later in Seoul, as LocalDate JSON.
    private static func week() -> (from: String, to: String) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Asia/Seoul") ?? .current
        func json(_ date: Date) -> String {
            let parts = calendar.dateComponents([.year, .month, .day], from: date)
            return #"{"year": \#(parts.year ?? 2026), "month": \#(parts.month ?? 1), "day": \#(parts.day ?? 1)}"#
        }
        return (json(Date()), json(Date().addingTimeInterval(6 * 86_400)))
    }
}
