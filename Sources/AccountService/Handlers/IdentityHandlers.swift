import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import YediCrypto
import YediProto

/// `yedi.account.Identity`: accounts without a password (docs/platform.md, "Verified identities"). A
/// verified phone number or provider account signs in to its account of the call's app, or gets a
/// sign-up ticket that creates one.
struct IdentityHandlers: YediAccount.Identity.ServiceProtocol, HandlerKitUser {
    let account: AccountHandlers

    var kit: HandlerKit { account.kit }
    private var store: any AccountStore { account.store }
    private var identity: IdentitySignIn { account.identity }

    func startPhoneVerification(
        _ request: YediAccount.StartPhoneVerificationRequest, context: ServerContext
    ) async throws -> YediAccount.StartPhoneVerificationResponse {
        let number = try FieldRule.mobilePhoneE164(request.phone)
        guard let app = identity.apps[context.app], app.signIn.contains("phone") else {
            throw RPCError(code: .failedPrecondition, message: "phone: not a way to sign in to \(context.app)")
        }
        let address = try account.admit(context)
        let code = identity.codes.next()
        let nowMilliseconds = clock.nowMilliseconds
        let answer = YediAccount.StartPhoneVerificationResponse(
            verificationID: ids.next(), codeExpiresAtMs: nowMilliseconds + PhoneCodeVerifier.codeLifetime)
        let throttle = identity.sends.of(app)
        let limits = PhoneSendLimits(
            throttle: throttle,
            numberKey: PhoneSendThrottle.numberKey(app: context.app.rawValue, number: number),
            addressKey: PhoneSendThrottle.addressKey(app: context.app.rawValue, address: address))
        let decision = try await store.startPhoneVerification(
            PhoneVerificationRecord(
                id: answer.verificationID, app: context.app, phone: number,
                codeHash: PhoneCodeVerifier.codeHash(code, id: answer.verificationID),
                expiresAtMilliseconds: answer.codeExpiresAtMs, createdAtMilliseconds: nowMilliseconds),
            sms: PhoneCodeMessage.sms(
                code: code, verificationID: answer.verificationID, to: number, appName: app.displayName),
            limits: limits)
        if let refusal = throttle.refusal(decision, now: nowMilliseconds) { throw refusal }
        return answer
    }

    func verifyPhone(
        _ request: YediAccount.VerifyPhoneRequest, context: ServerContext
    ) async throws -> YediAccount.VerifyIdentityResponse {
        let code = request.code ?? YediAccount.PhoneCode()
        return try await signIn(.phoneCode(verificationID: code.verificationID, code: code.code), context: context)
    }

    func verifyProvider(
        _ request: YediAccount.VerifyProviderRequest, context: ServerContext
    ) async throws -> YediAccount.VerifyIdentityResponse {
        let assertion = request.assertion ?? YediAccount.ProviderAssertion()
        return try await signIn(.provider(name: assertion.provider, token: assertion.token), context: context)
    }

    func checkNickname(
        _ request: YediAccount.CheckNicknameRequest, context: ServerContext
    ) async throws -> YediAccount.CheckNicknameResponse {
        try account.admit(context)
        guard let app = identity.apps[context.app] else {
            throw RPCError(code: .failedPrecondition, message: "\(context.app) has no nicknames")
        }
        let nickname: String
        do {
            nickname = try Self.nickname(request.nickname, app: app)
        } catch {
            return YediAccount.CheckNicknameResponse(available: false, reason: error.message)
        }
        guard try await !store.nicknameTaken(nickname, app: context.app) else {
            return YediAccount.CheckNicknameResponse(available: false, reason: "nickname: already in use")
        }
        return YediAccount.CheckNicknameResponse(available: true)
    }

    func completeIdentitySignUp(
        _ request: YediAccount.CompleteIdentitySignUpRequest, context: ServerContext
    ) async throws -> YediAccount.CompleteSignUpResponse {
        let refused = RPCError(code: .unauthenticated, message: "ticket: unknown, expired or already used")
        guard !request.ticket.isEmpty, request.ticket.utf8.count <= 200 else { throw refused }
        try account.admit(context)
        guard let app = identity.apps[context.app] else { throw refused }
        let nickname = try Self.nickname(request.nickname, app: app)
        let now = clock.nowMilliseconds
        guard let ticket = try await store.signUpTicket(hash: SHA256.hash(request.ticket), app: context.app, now: now)
        else { throw refused }
        // Housetainer's signup takes an invitation code and the terms (`yedi.housetainer.Members/SignUp`).
        guard context.app != HousetainerRules.app else {
            throw RPCError(
                code: .failedPrecondition, message: "ticket: Housetainer members sign up with Members/SignUp")
        }
        guard let role = Self.memberRole(of: app) else {
            throw RPCError(code: .failedPrecondition, message: "\(context.app) has no member role to sign up as")
        }
        let user = UserRecord(
            id: ids.next(), role: role, app: context.app, email: ticket.identity.email ?? "", name: nickname,
            phone: ticket.identity.kind == "phone" ? "0" + ticket.identity.subject.dropFirst(3) : "", gender: 0,
            birthDate: nil, passwordHash: nil, createdAtMilliseconds: now, nickname: nickname)
        let refresh = account.credentials.sessions.newRefreshToken(userID: user.id)
        do {
            try await store.completeIdentitySignUp(ticket: ticket, user: user, session: refresh.record, now: now)
        } catch AccountStoreError.notFound {
            throw refused
        } catch AccountStoreError.nicknameTaken {
            throw RPCError(code: .alreadyExists, message: "nickname: already in use")
        } catch AccountStoreError.identityTaken, AccountStoreError.emailTaken {
            throw RPCError(code: .alreadyExists, message: "ticket: this identity has an account already; sign in")
        }
        return YediAccount.CompleteSignUpResponse(
            user: AccountHandlers.user(user),
            session: try account.credentials.sessions.session(for: user, refresh: refresh))
    }

    /// Verifies `assertion` (charged to the client's sign-in limits): a session for the account the
    /// identity is linked to in the call's app, or a ticket to create one.
    private func signIn(_ assertion: IdentityAssertion, context: ServerContext) async throws
        -> YediAccount.VerifyIdentityResponse
    {
        try account.admit(context)
        let verified = try await identity.verifier.verify(assertion, app: context.app)
        if let user = try await store.user(app: context.app, identity: verified) {
            try AccountHandlers.refuseIfSuspended(user, now: clock.nowMilliseconds)
            let refresh = account.credentials.sessions.newRefreshToken(userID: user.id)
            try await store.createSession(refresh.record)
            return YediAccount.VerifyIdentityResponse(
                outcome: .signedIn(
                    .init(
                        user: AccountHandlers.user(user),
                        session: try account.credentials.sessions.session(for: user, refresh: refresh))))
        }
        let ticket = Base64URL.encode(SecureRandom.bytes(32))
        let record = SignUpTicketRecord(
            ticketHash: SHA256.hash(ticket), app: context.app, identity: verified,
            expiresAtMilliseconds: clock.nowMilliseconds + IdentitySignIn.ticketLifetime(identity.apps[context.app]))
        try await store.createSignUpTicket(record)
        return YediAccount.VerifyIdentityResponse(
            outcome: .signUp(
                .init(
                    ticket: ticket, expiresAtMs: record.expiresAtMilliseconds, identity: verified.description,
                    email: verified.email ?? "")))
    }

    /// The nickname rule: 1 to the app's `nickname_max_characters` (10) characters, no control
    /// characters, none of the app's banned words (uniqueness is the store's index).
    static func nickname(_ value: String, app: AppConfiguration) throws(RPCError) -> String {
        // Zipadoo's own rule (^[A-Za-z0-9가-힣]{2,6}$), the same as its Friends/SignUp.
        if app.app == SQLiteZipadooFriendStore.app { _ = try ZipadooFields.nickname(value) }
        let nickname = try FieldRule.name(
            value, field: "nickname", maxCharacters: app.limit("nickname_max_characters", default: 10))
        guard !app.nicknameIsBanned(nickname) else {
            throw FieldRule.invalid("nickname", "this nickname can't be used")
        }
        return nickname
    }

    /// The role a new account of `app` gets: `member`.
    static func memberRole(of app: AppConfiguration) -> UserRole? {
        app.roles.contains("member") ? "member" : nil
    }
}
