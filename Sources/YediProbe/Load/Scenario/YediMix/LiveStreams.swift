import LoadGenerator
import NIOConcurrencyHelpers
import RPCCore
import YediProto

/// The run's live chat subscribers (`--streams N`): N ChatService `Subscribe` streams, spread round robin
/// over the cast's users (designers first), so each member of a room listens and a user has at most
/// ⌈N / users⌉ streams (ChatService allows `perUserLimit`). They are opened, and caught up, before the
/// timed part, on their own connections (`streamsPerConnection` each, under the 256 calls RPCCore's
/// server allows on one connection), and closed after it. Each `MessageAdded` is matched with the send
/// that caused it by its client message id (`DeliveryMatcher`). A stream that ends early is counted by
/// its status; the run goes on.
final class LiveStreams: Sendable {
    /// ChatService's limit of open streams per user (`ChatEventHub`, the runtime's `StreamHub.maxPerKey`).
    static let perUserLimit = 16
    static let streamsPerConnection = 200

    private struct State {
        /// Caught-up streams still open, per user id.
        var open: [String: Int] = [:]
        var caughtUp = 0
        var ended = 0
        /// Streams that ended before the run closed them, by status.
        var ends: [String: UInt64] = [:]
        var closing = false
    }

    private let state = NIOLockedValueBox(State())
    let count: Int

    private init(count: Int) { self.count = count }

    /// The user index of each stream: round robin over `users`.
    static func owners(streams: Int, users: Int) -> [Int] { (0..<streams).map { $0 % users } }

    /// Live streams of `user` now: what a message to one of their rooms should reach.
    func openCount(_ user: String) -> Int { state.withLockedValue { $0.open[user] ?? 0 } }

    /// Streams caught up and not ended, over all users.
    var openTotal: Int { state.withLockedValue { $0.open.values.reduce(0, +) } }

    /// Streams that ended early, by status.
    var ends: [String: UInt64] { state.withLockedValue { $0.ends } }

    /// Opens `count` streams for `users`, waits until each is caught up (or ended), runs `body`, then
    /// waits up to `drain` for deliveries still expected and closes the streams.
    static func with<Result: Sendable>(
        count: Int, users: [(id: String, token: String)], configuration: ClientConfiguration,
        connectTimeout: Duration, matcher: DeliveryMatcher<ContinuousClock.Instant>, drain: Duration = .seconds(3),
        _ body: @Sendable (LiveStreams) async throws -> Result
    ) async throws -> Result {
        var configuration = configuration
        configuration.connectionsPerTarget = max(1, (count + streamsPerConnection - 1) / streamsPerConnection)
        let client = try RPCClient(configuration: configuration)
        let streams = LiveStreams(count: count)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            var readers: [Task<Void, Never>] = []
            func close() async {
                streams.state.withLockedValue { $0.closing = true }
                for reader in readers { reader.cancel() }
                for reader in readers { await reader.value }
                client.beginGracefulShutdown()
            }
            do {
                try await client.waitUntilReady(timeout: connectTimeout)
                let deadline = ContinuousClock.now + max(connectTimeout, .seconds(30))
                while client.readyConnectionCount < configuration.connectionsPerTarget, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(5))
                }
                let chat = YediChat.ChatService.Client(client)
                for owner in owners(streams: count, users: users.count) {
                    readers.append(Task { await streams.read(chat, user: users[owner], matcher: matcher) })
                }
                while streams.state.withLockedValue({ $0.caughtUp + $0.ended }) < count, ContinuousClock.now < deadline
                {
                    try await Task.sleep(for: .milliseconds(10))
                }
                let result = try await body(streams)
                let drained = ContinuousClock.now + drain
                while matcher.outstanding > 0, ContinuousClock.now < drained {
                    try await Task.sleep(for: .milliseconds(10))
                }
                await close()
                try await group.waitForAll()
                return result
            } catch {
                await close()
                try? await group.waitForAll()
                throw error
            }
        }
    }

    /// One stream: from the first retained event, until the run closes it or it ends.
    private func read(
        _ chat: YediChat.ChatService.Client, user: (id: String, token: String),
        matcher: DeliveryMatcher<ContinuousClock.Instant>
    ) async {
        var metadata = Metadata()
        metadata["authorization"] = "Bearer \(user.token)"
        var live = false
        let status: String
        do {
            try await chat.subscribe(.init(), options: CallOptions(timeout: .seconds(6 * 3600), metadata: metadata)) {
                stream in
                for try await event in stream {
                    switch event.event {
                    case .messageAdded(let added)?:
                        let key = added.message?.clientMessageID ?? ""
                        if !key.isEmpty { matcher.delivered(key, at: .now) }
                    case .caughtUp?:
                        guard !live else { continue }
                        live = true
                        state.withLockedValue { state in
                            state.caughtUp += 1
                            state.open[user.id, default: 0] += 1
                        }
                    default:
                        continue
                    }
                }
            }
            status = "OK"
        } catch let error as RPCError {
            status = error.code.name
        } catch {
            status = StatusCode.unknown.name
        }
        state.withLockedValue { state in
            if live { state.open[user.id, default: 1] -= 1 }
            guard !state.closing else { return }
            state.ended += 1
            state.ends[status, default: 0] += 1
        }
    }
}
