import Logging
import RPCCore
import YediProto

/// `yedi.runtime.Revocations`: every service process hears from AccountService (through its outbox)
/// that a user's tokens no longer count, and answers once that user's running calls have ended, so the
/// `PurgeUser` delivered after it finds nothing written behind its back.
struct RevocationService: YediRuntime.Revocations.ServiceProtocol {
    let revokedUsers: RevokedUsers
    let database: ServiceDatabase
    let calls: UserCallTracker
    /// The longest a running call of the user is waited for; a call runs for at most its deadline.
    var drainTimeout: Duration = .seconds(30)

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
        try await database.write { db in
            try revokedUsers.revoke(
                userID: request.userID, revokedAt: request.revokedAtMs, keepUntil: request.keepUntilMs, in: db)
        }
        guard await calls.waitUntilIdle(request.userID, timeout: drainTimeout) else {
            // The job is retried: the purge must not run while a write of the user may still commit.
            throw RPCError(code: .unavailable, message: "calls of the revoked user are still running")
        }
        context.logger.info("user revoked", metadata: ["user": "\(context.userTag(request.userID))"])
        return YediRuntime.RevokeUserResponse()
    }
}
