import Logging
import RPCCore
import YediProto

/// `yedi.runtime.Revocations`: every service process hears from AccountService (through its outbox)
/// that a user's tokens no longer count, and answers once that user's running calls have ended, so the
/// `PurgeUser` delivered after it finds nothing written behind its back.
struct RevocationService: YediRuntime.Revocations.ServiceProtocol {
    let revokedUsers: RevokedUsers
    let engine: ServiceEngine
    let calls: UserCallTracker
    /// What the service does when a user is revoked (end their live streams), before the wait.
    let onRevoked: @Sendable (String) async -> Void
    /// The longest a running call of the user is waited for: under the outbox's delivery timeout (10 s),
    /// so the answer arrives; a longer call makes the job fail and be delivered again.
    var drainTimeout: Duration = .seconds(8)

    func revokeUser(
        _ request: YediRuntime.RevokeUserRequest, context: ServerContext
    ) async throws -> YediRuntime.RevokeUserResponse {
        guard !request.userID.isEmpty else {
            throw RPCError(code: .invalidArgument, message: "user_id: required")
        }
        guard request.revokedAtMs > 0, request.keepUntilMs >= request.revokedAtMs else {
            throw RPCError(code: .invalidArgument, message: "keep_until_ms: from revoked_at_ms on")
        }
        let revokedUsers = self.revokedUsers
        let (userID, revokedAt, keepUntil) = (request.userID, request.revokedAtMs, request.keepUntilMs)
        switch engine {
        case .sqlite(let database):
            try await database.write { db in
                try revokedUsers.revoke(userID: userID, revokedAt: revokedAt, keepUntil: keepUntil, in: db)
            }
        case .postgres(let postgres):
            try await postgres.write { tx in
                try await revokedUsers.revoke(userID: userID, revokedAt: revokedAt, keepUntil: keepUntil, in: tx)
            }
        }
        await onRevoked(request.userID)
        guard await calls.waitUntilIdle(request.userID, timeout: drainTimeout) else {
            // The job is retried: the purge must not run while a write of the user may still commit.
            throw RPCError(code: .unavailable, message: "calls of the revoked user are still running")
        }
        context.logger.info("user revoked", metadata: ["user": "\(context.userTag(request.userID))"])
        return YediRuntime.RevokeUserResponse()
    }
}
