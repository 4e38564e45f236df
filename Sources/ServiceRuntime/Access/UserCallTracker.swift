import RPCCore
import Synchronization

/// Counts each user's calls running in this process, so that revoking a user can wait for the calls that
/// started before it: a write of theirs that commits after the purge would otherwise survive it.
///
/// An interceptor placed after authentication; a call counts for its caller and for the user it is
/// made on behalf of.
public final class UserCallTracker: ServerInterceptor, Sendable {
    private let running = Mutex<[String: Int]>([:])

    public init() {}

    public func intercept(
        context: ServerContext,
        next: @Sendable (ServerContext) async throws -> ServerResponse
    ) async throws -> ServerResponse {
        let users = Set([context.caller.userID, context.onBehalfOf?.id].compactMap { $0 })
        guard !users.isEmpty else { return try await next(context) }
        running.withLock { running in
            for user in users { running[user, default: 0] += 1 }
        }
        defer {
            running.withLock { running in
                for user in users {
                    let left = (running[user] ?? 1) - 1
                    running[user] = left > 0 ? left : nil
                }
            }
        }
        return try await next(context)
    }

    /// The number of `userID`'s calls running now.
    public func runningCalls(of userID: String) -> Int { running.withLock { $0[userID] ?? 0 } }

    /// Returns once `userID` has no call running (new ones are refused by then: the user is revoked), or
    /// after `timeout`; true if none is left. Polls: it runs once per deleted account.
    public func waitUntilIdle(_ userID: String, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while runningCalls(of: userID) > 0 {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }
}
