import AccessTokens
import ArgumentParser
import BenchSupport
import Foundation
import Histogram
import Logging
import RPCCore
import ServiceRuntime
import Synchronization
import YediProto

/// ChatService as it runs: the real `ChatService` executable (found next to this one) as a child process
/// on a throwaway dev PKI, called over TLS; AccountService is stood in for by a small server in this
/// process (names for the room checks), presenting the PKI's `account` certificate.
///
///     swift build -c release --product ChatService && swift build -c release --product chat-bench
///     $(swift build -c release --show-bin-path)/chat-bench
///
/// Prints JSON lines:
/// - `send-to-delivery`: with `--streams` open Subscribe streams (one per designer, spread over connections
///   of at most `--calls-per-connection` calls), a customer sends into a random room and the time until the
///   designer's stream delivers it is recorded (p50/p99).
/// - `history-page`: ListMessages p50/p99 of the newest page and of an older page, cold (the first read of
///   a room after a write: from SQLite) and warm (again: from the LRU page cache).
///
/// With `--slp`, the rooms are SLP match rooms (issue 28): ChatService serves the repository's app files
/// (`--apps`), each room is opened by `OpenMatchRoom` with the PKI's `account` certificate (as
/// AccountService's outbox does), and both members are SLP members (`app = slp`, role `member`): one
/// sends, the other's Subscribe stream delivers. Every recipient has a stream open, so no push is queued.
///
/// `--postgres` runs the same on PostgreSQL (docs/postgres.md): a fresh database on the development server
/// (`deploy/postgres-dev.sh --test`), dropped at the end; `--replicas N` starts N ChatService processes on
/// it. The streams are all on the first replica; the messages are sent through it (`sent_via` "same"),
/// then, with 2 or more replicas, through the second ("other": delivered by NOTIFY and a read from the
/// database). Each line names its engine and replicas.
///
/// `--failover` (PostgreSQL, 2 or more replicas) measures a replica's death instead: the streams and the
/// senders spread over every replica; replica 0 gets SIGKILL mid-run and is restarted later (`failover`
/// line, ChatFailover.swift).
@main
struct ChatBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat-bench",
        abstract: "Send-to-delivery latency over many open streams and history page latency, cold and warm cache."
    )

    @Option(help: "The ChatService executable (default: next to this one).")
    var service: String?

    @OptionGroup var pkiOptions: PKIOptions

    @Option(help: "Open streams (one room and one subscribed designer each).")
    var streams = 1_000

    @Option(help: "Streams per client connection (the server runs at most 256 calls per connection).")
    var callsPerConnection = 200

    @Option(help: "Messages sent for the latency figures.")
    var messages = 3_000

    @Option(help: "Concurrent senders for the latency figures.")
    var senders = 4

    @Option(help: "Rooms filled for the history figures.")
    var historyRooms = 200

    @Option(help: "Messages per history room.")
    var historyMessages = 60

    @Option(help: "Warm reads per history room.")
    var warmReads = 5

    @Flag(help: "Keep the temporary folder (PKI, data, the service's log).")
    var keep = false

    @Flag(help: "SLP match rooms (OpenMatchRoom as AccountService, SLP members) instead of YeDi consult rooms.")
    var slp = false

    @Option(help: "The app files ChatService serves with --slp (deploy/apps).")
    var apps = "deploy/apps"

    @Flag(help: "On PostgreSQL: a fresh database on the development server (deploy/postgres-dev.sh --test).")
    var postgres = false

    @Option(help: "ChatService processes on the one PostgreSQL database (streams on the first).")
    var replicas = 1

    @OptionGroup var failoverOptions: FailoverOptions

    func run() async throws {
        guard replicas >= 1, postgres || replicas == 1 else { throw BenchError("--replicas above 1 needs --postgres") }
        try failoverOptions.check(postgres: postgres, replicas: replicas)
        let work = FileManager.default.temporaryDirectory.appendingPathComponent(
            "yedi-chat-bench-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(at: work) } }
        try await BenchPostgres.with(postgres) { try await measure(in: work, database: $0) }
    }

    /// `"engine":…,"replicas":…,` for every line.
    var engineFields: String { BenchPostgres.engineField(postgres: postgres) + #""replicas":\#(replicas),"# }

    private func measure(in work: URL, database: BenchPostgres?) async throws {
        let pkiDirectory = try pkiOptions.folder(in: work)
        let executable = try service ?? ServiceProcess.besideThisExecutable("ChatService")

        let account = try await FakeAccount.start(pki: pkiDirectory)
        defer { account.stop() }
        // AccountService is the stand-in; Content and Booking nowhere: the bench sends text only.
        let nowhere = try ServiceProcess.freePort()
        let replicaArguments =
            [
                "--peer", "account=127.0.0.1:\(account.port)", "--peer", "content=127.0.0.1:\(nowhere)",
                "--peer", "booking=127.0.0.1:\(nowhere)",
            ] + (slp ? ["--apps", apps] : []) + (database?.replicaArguments(sharingKeysIn: work) ?? [])
        let startReplica = ServiceProcess.replicaStarter(
            executable, name: "ChatService", pki: pkiDirectory, work: work, arguments: replicaArguments)
        let processes = ProcessList()
        defer { processes.stopAll() }
        for replica in 0..<replicas { processes.append(try await startReplica(replica, nil, "")) }
        let process = processes[0]
        // The failover run spreads every client over the replicas; the others talk to the first.
        let configuration =
            failoverOptions.failover
            ? ServiceProcess.clientConfiguration(spreadingOver: processes.all) : process.clientConfiguration()

        let issuer = AccessTokenIssuer(
            signingKey: try TokenSigningKey.load(pemFile: pkiDirectory + "/token-signing.key"),
            lifetime: .seconds(3_600))
        // The sender ("customer") and the streamed recipient ("designer") of each room; with --slp, two
        // SLP members.
        let slp = self.slp
        let pairs = try (0..<streams).map { index in
            slp
                ? (
                    customer: try issuer.issue(
                        userID: "slp-a-\(index)", role: "member", sessionID: "s", app: "slp"
                    ).token,
                    designer: try issuer.issue(
                        userID: "slp-b-\(index)", role: "member", sessionID: "s", app: "slp"
                    ).token,
                    designerID: "slp-b-\(index)"
                )
                : (
                    customer: try issuer.issue(userID: "bench-c-\(index)", role: .customer, sessionID: "s").token,
                    designer: try issuer.issue(userID: "bench-d-\(index)", role: .designer, sessionID: "s").token,
                    designerID: "bench-d-\(index)"
                )
        }
        let connections = max(1, (streams + callsPerConnection - 1) / callsPerConnection)
        var clients: [(RPCClient, Task<Void, Never>)] = []
        for _ in 0..<connections {
            let client = try RPCClient(configuration: configuration)
            clients.append((client, Task { await client.run() }))
        }
        defer {
            for (client, _) in clients { client.beginGracefulShutdown() }
        }
        let chat = YediChat.ChatService.Client(clients[0].0)

        // Rooms, opened by the customers (or, with --slp, by "AccountService"), 16 at a time.
        let streams = self.streams
        var rooms = [String](repeating: "", count: streams)
        var asAccount = configuration
        asAccount.tls = .client(
            trustRootsFile: pkiDirectory + "/ca.pem", certificateChainFile: pkiDirectory + "/account.pem",
            privateKeyFile: pkiDirectory + "/account.key")
        let accountClient = try RPCClient(configuration: asAccount)
        let accountTask = Task { await accountClient.run() }
        defer {
            accountClient.beginGracefulShutdown()
            accountTask.cancel()
        }
        let asService = YediChat.ChatService.Client(accountClient)
        try await withThrowingTaskGroup(of: (Int, String).self) { group in
            var next = 0
            func add() {
                let index = next
                next += 1
                group.addTask {
                    if slp {
                        let match = "match-\(index)"
                        _ = try await asService.openMatchRoom(
                            .init(matchID: match, memberA: "slp-a-\(index)", memberB: "slp-b-\(index)"),
                            options: CallOptions(timeout: .seconds(30)))
                        return (index, match)
                    }
                    let answer = try await chat.openRoom(
                        .init(designerID: pairs[index].designerID), options: Self.bearer(pairs[index].customer))
                    return (index, answer.room?.id ?? "")
                }
            }
            for _ in 0..<min(16, streams) { add() }
            while let (index, room) = try await group.next() {
                rooms[index] = room
                if next < streams { add() }
            }
        }

        if failoverOptions.failover {
            let senderClient = try RPCClient(configuration: configuration)
            let senderTask = Task { await senderClient.run() }
            clients.append((senderClient, senderTask))
            try await measureFailover(
                processes: processes, restart: { try await startReplica(0, $0, "-restarted") },
                streamClients: clients.prefix(connections).map(\.0), senderClient: senderClient, pairs: pairs,
                rooms: rooms)
            return
        }
        // The senders' clients: through the streams' replica, then through another one.
        var senderClients: [(via: String, client: RPCClient)] = [("same", clients[0].0)]
        if processes.count > 1 {
            let other = try RPCClient(configuration: processes[1].clientConfiguration())
            let otherTask = Task { await other.run() }
            clients.append((other, otherTask))
            senderClients.append(("other", other))
        }
        try await deliveryLatency(
            streamClients: clients.prefix(connections).map(\.0), senders: senderClients, pairs: pairs, rooms: rooms,
            connections: connections)
        try await historyLatency(chat: chat, pairs: pairs, rooms: rooms)
    }

    // MARK: Send to delivery

    private func deliveryLatency(
        streamClients clients: [RPCClient], senders senderClients: [(via: String, client: RPCClient)],
        pairs: [(customer: String, designer: String, designerID: String)], rooms: [String], connections: Int
    ) async throws {
        let (streams, messages, senders, callsPerConnection) = (
            self.streams, self.messages, self.senders, self.callsPerConnection
        )
        let base = ContinuousClock.now
        let recorder = Recorder()
        var readers: [Task<Void, Never>] = []
        for index in 0..<streams {
            let client = YediChat.ChatService.Client(clients[index / callsPerConnection])
            let token = pairs[index].designer
            readers.append(
                Task {
                    do {
                        try await client.subscribe(.init(), options: Self.bearer(token, timeout: .seconds(3_600))) {
                            stream in
                            for try await event in stream {
                                switch event.event {
                                case .caughtUp?: recorder.caughtUp()
                                case .messageAdded(let added)?:
                                    guard case .text(let text)? = added.message?.body,
                                        let sentAt = Int64(text.text)
                                    else { continue }
                                    let now = Int64(Figures.nanoseconds(ContinuousClock.now - base))
                                    recorder.delivered(UInt64(max(0, now - sentAt)))
                                default: continue
                                }
                            }
                        }
                    } catch {
                        recorder.ended(error)
                    }
                })
        }
        while recorder.caughtUpCount < streams {
            if recorder.endedCount > 0 { throw BenchError("streams ended early: \(recorder.firstError ?? "")") }
            try await Task.sleep(for: .milliseconds(50))
        }
        for (via, senderClient) in senderClients {
            recorder.reset()
            let chat = YediChat.ChatService.Client(senderClient)
            let start = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for sender in 0..<senders {
                    group.addTask {
                        var random = SplitMix64(seed: UInt64(sender + 1))
                        for _ in stride(from: sender, to: messages, by: senders) {
                            let index = Int(random.next() % UInt64(streams))
                            let sentAt = Int64(Figures.nanoseconds(ContinuousClock.now - base))
                            _ = try await chat.sendMessage(
                                .init(roomID: rooms[index], body: .text(.init(text: "\(sentAt)"))),
                                options: Self.bearer(pairs[index].customer))
                        }
                    }
                }
                try await group.waitForAll()
            }
            let deadline = ContinuousClock.now + .seconds(60)
            while recorder.deliveredCount < messages, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let elapsed = Figures.seconds(ContinuousClock.now - start)
            let histogram = recorder.histogram
            print(
                #"{"bench":"send-to-delivery",\#(engineFields)"sent_via":"\#(via)","#
                    + #""room_kind":"\#(slp ? "slp-match" : "consult")","streams":\#(streams),"#
                    + #""connections":\#(connections),"#
                    + #""messages":\#(messages),"delivered":\#(histogram.totalCount),"senders":\#(senders),"#
                    + #""sends_per_second":\#(Figures.format(Double(messages) / elapsed)),"#
                    + #""p50_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(50))),"#
                    + #""p99_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(99))),"#
                    + #""streams_ended":\#(recorder.endedCount),"tls":true}"#)
        }
        for reader in readers { reader.cancel() }
        for reader in readers { await reader.value }
    }

    // MARK: History pages

    private func historyLatency(
        chat: YediChat.ChatService.Client, pairs: [(customer: String, designer: String, designerID: String)],
        rooms: [String]
    ) async throws {
        let count = min(historyRooms, rooms.count)
        let (historyMessages, warmReads) = (self.historyMessages, self.warmReads)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for index in stride(from: worker, to: count, by: 4) {
                        for message in 0..<historyMessages {
                            _ = try await chat.sendMessage(
                                .init(roomID: rooms[index], body: .text(.init(text: "history \(message)"))),
                                options: Self.bearer(pairs[index].customer))
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        for (name, beforeSeq) in [("newest", Int64(0)), ("older", Int64(max(2, historyMessages - 13)))] {
            var cold = Figures.newHistogram()
            var warm = Figures.newHistogram()
            for index in 0..<count {
                let request = YediChat.ListMessagesRequest(roomID: rooms[index], beforeSeq: beforeSeq)
                let options = Self.bearer(pairs[index].designer)
                var callStart = ContinuousClock.now
                _ = try await chat.listMessages(request, options: options)
                cold.record(Figures.nanoseconds(ContinuousClock.now - callStart).magnitude)
                for _ in 0..<warmReads {
                    callStart = ContinuousClock.now
                    _ = try await chat.listMessages(request, options: options)
                    warm.record(Figures.nanoseconds(ContinuousClock.now - callStart).magnitude)
                }
            }
            for (cache, histogram) in [("cold", cold), ("warm", warm)] {
                print(
                    #"{"bench":"history-page",\#(engineFields)"room_kind":"\#(slp ? "slp-match" : "consult")","page":"\#(name)","#
                        + #""cache":"\#(cache)","rooms":\#(count),"#
                        + #""reads":\#(histogram.totalCount),"messages_per_room":\#(historyMessages),"#
                        + #""p50_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(50))),"#
                        + #""p99_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(99))),"tls":true}"#)
            }
        }
    }

    // MARK: Helpers

    static func bearer(_ token: String, timeout: Duration = .seconds(30)) -> CallOptions {
        CallOptions(timeout: timeout, metadata: ["authorization": "Bearer \(token)"])
    }
}

/// Delivery latencies and stream states, from many reader tasks.
final class Recorder: Sendable {
    private struct State {
        var histogram = Figures.newHistogram()
        var caughtUp = 0
        var ended = 0
        var firstError: String?
    }

    private let state = Mutex(State())

    func caughtUp() { state.withLock { $0.caughtUp += 1 } }
    /// Forgets the deliveries so far (between two rounds of sends).
    func reset() { state.withLock { $0.histogram = Figures.newHistogram() } }
    func delivered(_ nanoseconds: UInt64) { state.withLock { _ = $0.histogram.record(nanoseconds) } }
    func ended(_ error: any Error) {
        state.withLock {
            $0.ended += 1
            if $0.firstError == nil { $0.firstError = "\(error)" }
        }
    }

    var caughtUpCount: Int { state.withLock { $0.caughtUp } }
    var endedCount: Int { state.withLock { $0.ended } }
    var firstError: String? { state.withLock { $0.firstError } }
    var deliveredCount: Int { state.withLock { Int($0.histogram.totalCount) } }
    var histogram: Histogram<UInt64> { state.withLock { $0.histogram } }
}
