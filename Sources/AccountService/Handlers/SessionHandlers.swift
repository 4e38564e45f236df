import AccessTokens
import Foundation
import Logging
import RPCCore
import ServiceRuntime
import YediCrypto
import YediProto

/// Sign-in, sessions and deletion: the calls that cost a password hash, with the rate limits, the KDF
/// queue and the throttle in front of it (docs/account.md, "Abuse resistance"). Sign-up is in
/// `SignUpHandlers.swift`.
extension AccountHandlers {
    // MARK: Sessions

    func signIn(_ request: YediAccount.SignInRequest, context: ServerContext) async throws -> YediAccount.SignInResponse
    {
        let refused = RPCError(code: .unauthenticated, message: "wrong email or password")
        guard let email = try? FieldRule.email(request.email), !request.password.isEmpty,
            request.password.count <= 128
        else { throw refused }
        let address = try admit(context)
        let user = try await store.user(app: context.app, email: email)
        let account = UserRecord.signInAccount(app: context.app, email: email)
        guard
            try await checkPassword(request.password, of: account, hash: user?.passwordHash, address: address, context),
            let user
        else { throw refused }
        try Self.refuseIfSuspended(user, now: clock.nowMilliseconds)
        let refresh = credentials.sessions.newRefreshToken(userID: user.id)
        try await store.createSession(refresh.record)
        return YediAccount.SignInResponse(
            user: Self.user(user),
            session: try credentials.sessions.session(for: user, refresh: refresh))
    }

    func refreshSession(
        _ request: YediAccount.RefreshSessionRequest, context: ServerContext
    ) async throws -> YediAccount.RefreshSessionResponse {
        guard !request.refreshToken.isEmpty, request.refreshToken.utf8.count <= 200 else {
            throw RPCError(code: .unauthenticated, message: "refresh token unknown or signed out")
        }
        try credentials.refreshLimits.admit(context.peer, now: clock.now.timeIntervalSince1970)
        let next = credentials.sessions.newRefreshToken(userID: "")
        let outcome = try await store.rotateSession(
            refreshHash: SessionIssuer.hash(request.refreshToken), next: next.record, now: clock.nowMilliseconds)
        switch outcome {
        case .rotated(let userID, let familyID):
            guard let user = try await store.user(id: userID) else {
                throw RPCError(code: .unauthenticated, message: "refresh token unknown or signed out")
            }
            return YediAccount.RefreshSessionResponse(
                session: try credentials.sessions.session(
                    for: user, familyID: familyID, refreshToken: next.token,
                    refreshExpiresAt: next.record.expiresAtMilliseconds))
        case .reused:
            throw RPCError(
                code: .unauthenticated,
                message: "refresh token already used: the session was ended everywhere; sign in again")
        case .expired:
            throw RPCError(code: .unauthenticated, message: "refresh token expired; sign in again")
        case .unknown:
            throw RPCError(code: .unauthenticated, message: "refresh token unknown or signed out")
        }
    }

    func signOut(_ request: YediAccount.SignOutRequest, context: ServerContext) async throws
        -> YediAccount.SignOutResponse
    {
        if !request.refreshToken.isEmpty, request.refreshToken.utf8.count <= 200 {
            try await store.revokeFamily(
                refreshHash: SessionIssuer.hash(request.refreshToken), now: clock.nowMilliseconds)
        }
        return YediAccount.SignOutResponse()
    }

    // MARK: Deletion

    func deleteAccount(
        _ request: YediAccount.DeleteAccountRequest, context: ServerContext
    ) async throws -> YediAccount.DeleteAccountResponse {
        let user = try await currentUser(context)
        let address = try admit(context)
        if user.passwordHash == nil {
            try await checkFreshProof(request.proof, of: user)
        } else {
            guard !request.password.isEmpty, request.password.count <= 128,
                try await checkPassword(
                    request.password, of: UserRecord.signInAccount(app: user.app, email: user.email),
                    hash: user.passwordHash, address: address, context)
            else {
                throw RPCError(code: .permissionDenied, message: "password: wrong password")
            }
        }
        let identities = try await store.identities(userID: user.id)
        let devices = try await store.deviceTokens(userID: user.id)
        _ = try await store.deleteAccount(userID: user.id, now: clock.nowMilliseconds)
        var recipients = Set(identities.filter { $0.kind == "phone" }.map(\.subject) + devices)
        if !user.email.isEmpty { recipients.insert(user.email) }
        forgetSentMessages(recipients, [user.id])
        context.logger.info(
            "account deleted; purging the user from every service", metadata: ["user": "\(context.userTag(user.id))"])
        return YediAccount.DeleteAccountResponse()
    }

    /// A suspended member is told so, and until when, once their password proved who they are.
    static func refuseIfSuspended(_ user: UserRecord, now: Int64) throws(RPCError) {
        guard let until = user.suspendedUntilMilliseconds, until > now else { return }
        throw RPCError(code: .permissionDenied, message: "this account is suspended until \(until) (ms since 1970)")
    }

    /// Re-authentication of an account without a password: `proof` must verify, now, to one of the
    /// identities linked to `user` (a new phone code, or a provider assertion).
    func checkFreshProof(_ proof: YediAccount.IdentityProof?, of user: UserRecord) async throws {
        let assertion: IdentityAssertion
        switch proof?.proof {
        case .phone(let code)?: assertion = .phoneCode(verificationID: code.verificationID, code: code.code)
        case .provider(let given)?: assertion = .provider(name: given.provider, token: given.token)
        case nil:
            throw RPCError(
                code: .failedPrecondition,
                message: "proof: this account has no password; prove who you are the way you sign in")
        }
        let verified: VerifiedIdentity
        do {
            verified = try await identity.verifier.verify(assertion, app: user.app)
        } catch let error as RPCError where error.code == .unauthenticated {
            throw RPCError(code: .permissionDenied, message: "proof: \(error.message)")
        }
        let linked = try await store.identities(userID: user.id)
        guard linked.contains(where: { $0.kind == verified.kind && $0.subject == verified.subject }) else {
            throw RPCError(code: .permissionDenied, message: "proof: not an identity of this account")
        }
    }

    /// Charges a costly call to its client address and connection; returns the address key.
    @discardableResult
    func admit(_ context: ServerContext) throws(RPCError) -> String {
        try credentials.signInLimits.admit(context.peer, now: clock.now.timeIntervalSince1970)
    }

    /// Checks `password` under the sign-in throttle of (`account`, `address`): throws
    /// `RESOURCE_EXHAUSTED` while that pair is locked or the account is slowed, else returns whether the
    /// password matches `hash` (a missing hash is checked against the decoy, so it takes the same time).
    func checkPassword(
        _ password: String, of account: String, hash: String?, address: String, _ context: ServerContext
    ) async throws -> Bool {
        let now = clock.nowMilliseconds
        let decision = try await store.beginPasswordAttempt(
            account: account, address: address, now: now, throttle: credentials.throttle)
        if let refusal = credentials.throttle.refusal(decision, now: now) { throw refusal }
        let matches: Bool
        do {
            matches = try await kdf {
                try await credentials.passwords.verify(
                    password, against: hash ?? credentials.decoyHash, key: address, deadline: context.deadline)
            }
        } catch {
            try? await store.endPasswordAttempt(
                account: account, address: address, outcome: .abandoned, throttle: credentials.throttle)
            throw error
        }
        if matches, hash != nil {
            try await store.endPasswordAttempt(
                account: account, address: address, outcome: .succeeded, throttle: credentials.throttle)
            return true
        }
        return false
    }

    /// Runs a password hash, answering for the KDF queue: full is `RESOURCE_EXHAUSTED` (retry in 1 s);
    /// a caller gone before its turn gets the status it left with.
    func kdf<Value: Sendable>(_ work: () async throws -> Value) async throws -> Value {
        do {
            return try await work()
        } catch let error as KDFQueueError {
            switch error {
            case .full:
                throw RPCError(
                    code: .resourceExhausted, message: "busy: too many password checks waiting; try again in 1 s",
                    metadata: ["retry-after": "1"])
            case .deadlineExceeded:
                throw RPCError(code: .deadlineExceeded, message: "deadline passed before the password was checked")
            case .cancelled:
                throw RPCError(code: .cancelled, message: "cancelled before the password was checked")
            }
        }
    }
}
