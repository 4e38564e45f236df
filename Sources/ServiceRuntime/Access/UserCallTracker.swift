import Foundation
import RPCAccess
import RPCCore
import YediSync

/// Counts each user's unary calls running in this process, so that revoking a user can wait for the
/// calls that started before it: a write of theirs that commits after the purge would otherwise survive
/// it.
///
/// An interceptor placed after authentication; a call counts for its caller and for the user it is made
/// on behalf of. Once counted, a call of a user revoked meanwhile is refused: the revocation may have
/// been committed between authentication's check and the count, and its wait must not miss the call.
/// Server-streaming calls are not counted: they may run for hours (a chat stream), and a service whose
/// streams belong to users ends them when a user is revoked (`ServiceEnvironment.onUserRevoked`).
public final class UserCallTracker: ServerInterceptor, Sendable {
    private let running = TSanVisibleMutex<[String: Int]>([:])
    private let revokedUsers: (any RevocationLookup)?

    public init(revokedUsers: (any RevocationLookup)? = nil) {
        self.revokedUsers = revokedUsers
    }

    public func intercept(
        context: ServerContext,
        next: @Sendable (ServerContext) async throws -> ServerResponse
    ) async throws -> ServerResponse {
        let tokens = [context.caller.user, context.onBehalfOf].compactMap { $0 }
        let users = Set(tokens.map(\.id))
        guard !users.isEmpty, context.method.kind == .unary else { return try await next(context) }
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
        if let revokedUsers, tokens.contains(where: revokedUsers.isRevoked) {
            throw RPCError(code: .unauthenticated, message: "this account's sign-ins were revoked")
        }
        return try await next(context)
    }

    /// The number of `userID`'s unary calls running now.
    public func runningCalls(of userID: String) -> Int { running.withLock { $0[userID] ?? 0 } }

    /// Returns true once `userID` has no unary call running (new ones are refused by then: the user is
    /// revoked); false after `timeout`, or at once when the waiting task is cancelled. Polls: it runs
    /// once per deleted account.
    public func waitUntilIdle(_ userID: String, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while runningCalls(of: userID) > 0 {
            guard ContinuousClock.now < deadline else { return false }
            do {
                try await Task.sleep(for: .milliseconds(20))
            } catch {
                return false
            }
        }
        return true
    }
}

/// Whether a caller's token is revoked: issued up to a revocation of its user still in force (any
/// revocation, for a caller whose issue time is unknown).
public protocol RevocationLookup: Sendable {
    func isRevoked(_ user: AuthenticatedUser) -> Bool
}
