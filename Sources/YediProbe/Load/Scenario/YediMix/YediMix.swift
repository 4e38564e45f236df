import Foundation
import LoadGenerator
import NIOConcurrencyHelpers
import ProtoBridge
import RPCCore
import RPCTLS

/// `load --scenario yedi-mix`: the whole system under a plausible mix. It first seeds a data set through
/// the public RPCs (`Seeder`: designers with hours, a menu and posts; customers who follow one, booked one
/// of their slots and opened a chat room), opens `--streams` live chat subscriptions (`LiveStreams`),
/// then makes calls picked at random by weight (`YediMix.operations`) across the four services, and
/// measures send→deliver to the open streams beside each method's latency.
///
/// Users are new on every run (their addresses carry a random run id), so runs do not collide. The
/// access tokens are not refreshed: a run should end within their 15 minutes.
struct YediMix {
    let options: ScenarioOptions
    let connection: ConnectionOptions
    let connections: Int
    let configurations: [String: ClientConfiguration]
    let methods: [String: ProbeMethod]
    let mix: Mix
    let seeder: Seeder

    /// `reservations.day`: a customer makes at most 10 reservations a Seoul day, cancelled ones included.
    static let reservationsPerDay = 10

    init(options: ScenarioOptions, connection: ConnectionOptions, connections: Int) throws(ProbeError) {
        self.options = options
        self.connection = connection
        self.connections = connections
        let folder: URL
        if let sentMail = options.sentMail {
            folder = URL(fileURLWithPath: sentMail)
        } else {
            folder = try SentMessageFolder.devFolder()
        }
        let mailbox = SentMessageFolder(folder: folder)
        var configurations: [String: ClientConfiguration] = [:]
        for (service, address) in [
            ("account", options.account), ("content", options.content), ("booking", options.booking),
            ("chat", options.chat),
        ] {
            var configuration = try connection.clientConfiguration(address: address)
            configuration.connectionsPerTarget = connections
            configurations[service] = configuration
        }
        self.configurations = configurations
        var methods: [String: ProbeMethod] = [:]
        for name in Seeder.methods + Self.mixMethods {
            methods[name] = try SchemaCatalog.shared.requireMethod(name)
        }
        self.methods = methods
        mix = Mix(operations: Self.operations)
        seeder = Seeder(
            designers: options.designers, customers: options.customers, postsPerDesigner: options.posts,
            mailbox: mailbox, methods: methods)
    }

    // MARK: Running

    /// Seeds the cast, opens the streams, then runs the plan; the report has a line per method and the
    /// send→deliver latencies beside the totals.
    func run(plan: LoadPlan, progress: ProgressDisplay?) async throws(ProbeError) -> LoadReport {
        let connectTimeout = connection.connectTimeout
        let streamCount = options.streams
        let chatConfiguration = configurations["chat"]!
        let outcome: (tally: LoadTally, elapsed: Duration, interrupted: Bool)
        let perMethod = NIOLockedValueBox<[String: LoadTally]>([:])
        let matcher = DeliveryMatcher<ContinuousClock.Instant>()
        let deliveries: DeliverySummary?
        do {
            let result = try await ServiceClients.with(
                configurations, timeout: connection.callTimeout(for: .unary)
            ) { clients -> ((LoadTally, Duration, Bool), DeliverySummary?) in
                try await clients.waitUntilReady(timeout: connectTimeout)
                let seeded = try await seeder.seed(clients)
                let cast = seeded.cast
                let desk = ReservationDesk(
                    designerOf: cast.customers.map(\.designer), slots: seeded.slots,
                    budget: Self.reservationsPerDay - 1)
                let likes = LikeBook(posts: cast.postIDs.count)
                let timed: @Sendable (LiveStreams?) async -> (LoadTally, Duration, Bool) = { streams in
                    let context = MixContext(
                        cast: cast, methods: methods, likes: likes, desk: desk, deliveries: matcher, streams: streams)
                    return await runMix(context, clients: clients, plan: plan, perMethod: perMethod, progress: progress)
                }
                guard streamCount > 0 else { return (await timed(nil), DeliverySummary?.none) }
                Output.errorLine("yedi-mix: opening \(streamCount) chat streams")
                return try await LiveStreams.with(
                    count: streamCount, users: cast.users, configuration: chatConfiguration,
                    connectTimeout: connectTimeout, matcher: matcher
                ) { streams -> ((LoadTally, Duration, Bool), DeliverySummary?) in
                    let opened = streams.openTotal
                    let outcome = await timed(streams)
                    return (outcome, matcher.summary(streams: opened, streamEnds: streams.ends))
                }
            }
            (outcome, deliveries) = (result.0, result.1)
        } catch let error as ProbeError {
            throw error
        } catch let error as TLSError {
            throw ProbeError(settingUp: error)
        } catch let error as RPCConnectionError {
            throw ProbeError(connecting: error)
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
            operations: perMethod.withLockedValue { $0 }, deliveries: deliveries)
    }

    /// The timed part: the runner's calls, each an operation picked by weight; per method tallies.
    private func runMix(
        _ context: MixContext, clients: ServiceClients, plan: LoadPlan,
        perMethod: NIOLockedValueBox<[String: LoadTally]>, progress: ProgressDisplay?
    ) async -> (LoadTally, Duration, Bool) {
        let interrupts = Interrupts.stream()
        let mix = mix
        let call: LoadRunner.Call = { sequence in
            var random = SystemRandomNumberGenerator()
            let planned = mix.pick(using: &random).plan(context, &random, sequence)
            let start = ContinuousClock.now
            planned.started?(start)
            let status: String
            var reply: DynamicMessage?
            do {
                reply = try await clients.call(planned.service, planned.method, planned.json, token: planned.token)
                status = LoadTally.ok
            } catch let error as RPCError {
                status = error.code.name
            } catch {
                status = StatusCode.unknown.name
            }
            let latency = ContinuousClock.now - start
            planned.finished?(reply)
            perMethod.withLockedValue {
                $0[planned.name, default: LoadTally()].record(latency: latency, status: status)
            }
            return status
        }
        let show = progress.map { display in { @Sendable (line: ProgressLine) in display.show(line) } }
        defer { progress?.finish() }
        return await LoadSession.interruptible(by: interrupts) {
            await LoadRunner(plan: plan).run(call: call, progress: show)
        }
    }
}
