import AccessTokens
import Foundation
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport

@testable import AccountService

/// Members of any app made behind the RPCs, for tests of what members do rather than how they sign up
/// (the phone and provider sign-ins have tests of their own).
extension AccountFixture {
    /// The repository's app files (`deploy/apps`): the four apps as deployed.
    static let repositoryApps = ServiceHarness.repositoryApps

    /// An account of `app` stored directly as a password-less sign-in leaves it (no address, no password,
    /// a nickname when given) with a session, and a token for it.
    func member(_ id: String, app: AppID, role: UserRole = "member", nickname: String? = nil) async throws
        -> CallOptions
    {
        var user = AccountStoreContract.user(id, role: role)
        user.app = app
        user.email = ""
        user.passwordHash = nil
        user.nickname = nickname
        try await AccountServiceDefinition.accountStore(service.environment).createUser(
            user, designer: nil, session: AccountStoreContract.session("s-\(id)", user: id))
        return try token(id, app: app, role: role)
    }

    /// A token for `id` in `app` with `role`, on the member's session `s-<id>`, issued now by the clock.
    func token(_ id: String, app: AppID, role: UserRole) throws -> CallOptions {
        let clock = self.clock
        let issuer = AccessTokenIssuer(signingKey: try TestPKI.get().tokenSigningKey(), now: { clock.now })
        return options(try issuer.issue(userID: id, role: role, sessionID: "s-\(id)", app: app).token)
    }
}
