import RPCCore
import YediProto

/// `yedi.runtime.Users`: AccountService tells a service process, through its outbox, that a user's public
/// fields changed; the process's `UserDirectory` forgets the user (`ServiceEnvironment.onUserChanged`),
/// so the new name shows on the next read rather than when the cached entry expires. Forgetting twice
/// is harmless, so a redelivered job needs no receipt.
struct UserChangeService: YediRuntime.Users.ServiceProtocol {
    /// The environment's user-change hooks.
    let onChanged: @Sendable (String) async -> Void

    func userChanged(
        _ request: YediRuntime.UserChangedRequest, context: ServerContext
    ) async throws -> YediRuntime.UserChangedResponse {
        let userID = try FieldRule.id(request.userID, field: "user_id")
        await onChanged(userID)
        return YediRuntime.UserChangedResponse()
    }
}
