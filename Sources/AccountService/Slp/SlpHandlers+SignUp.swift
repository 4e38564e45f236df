import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import YediCrypto
import YediProto

/// SignUp and GetMe (issue 28, "Accounts"): the verified number's ticket becomes an account, its SLP
/// profile, session and push device in one transaction; GetMe tells the app which screen to open.
extension SlpHandlers {
    static let ticketRefused = RPCError(code: .unauthenticated, message: "ticket: unknown, expired or already used")

    func signUp(_ request: YediSlp.SignUpRequest, context: ServerContext) async throws -> YediSlp.SignUpResponse {
        if case .user = context.caller { return YediSlp.SignUpResponse(outcome: .alreadyRegistered) }
        guard !request.ticket.isEmpty, request.ticket.utf8.count <= 200 else { throw Self.ticketRefused }
        try account.admit(context)
        guard let app, let role = IdentityHandlers.memberRole(of: app) else { throw Self.ticketRefused }
        // The fields first (bad input is INVALID_ARGUMENT naming the field, whoever asks).
        let nickname = try FieldRule.name(
            request.nickname, field: "nickname", maxCharacters: app.limit("nickname_max_characters", default: 10))
        let now = clock.nowMilliseconds
        let birthDate = try FieldRules.birthDate(request.birthDate, today: clock.now)
        guard SlpRules.age(birthDate, now: now) >= SlpRules.minimumAge else {
            throw FieldRule.invalid("birth_date", "SLP is for people aged \(SlpRules.minimumAge) or more")
        }
        let email = try FieldRule.email(request.email)
        let gender = try FieldRules.gender(request.gender)
        var push: (PushPlatform, String)?
        if !request.pushToken.isEmpty {
            let platform =
                request.pushPlatform == .unspecified
                ? PushPlatform.fcm : try NotificationHandlers.platform(request.pushPlatform)
            guard request.pushToken.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw FieldRule.invalid("push_token", "printable ASCII without spaces")
            }
            push = (platform, request.pushToken)
        }
        let hash = SHA256.hash(request.ticket)
        guard let ticket = try await account.store.signUpTicket(hash: hash, app: context.app, now: now) else {
            if try await store.ticketUsed(hash: hash, now: now) {
                return YediSlp.SignUpResponse(outcome: .alreadyRegistered)
            }
            throw Self.ticketRefused
        }
        guard !app.nicknameIsBanned(nickname) else {
            return YediSlp.SignUpResponse(outcome: .nicknameRefused, reason: "nickname: this nickname can't be used")
        }
        let user = UserRecord(
            id: ids.next(), role: role, app: context.app, email: "", name: nickname,
            phone: ticket.identity.kind == "phone" ? "0" + ticket.identity.subject.dropFirst(3) : "", gender: gender,
            birthDate: nil, passwordHash: nil, createdAtMilliseconds: now, nickname: nickname)
        let refresh = account.credentials.sessions.newRefreshToken(userID: user.id)
        let profile = SlpProfileRecord(
            userID: user.id, gender: gender, birthDate: birthDate, email: email, createdAtMilliseconds: now)
        let outcome = try await store.signUp(
            SlpSignUpRecord(
                ticket: ticket, user: user, session: refresh.record, profile: profile,
                device: push.map { platform, token in
                    DeviceRecord(
                        id: ids.next(), userID: user.id, app: context.app, platform: platform, token: token,
                        sessionFamilyID: refresh.record.familyID, registeredAtMilliseconds: now)
                }, keepDevices: Int(quotas.devices.limit), now: now))
        switch outcome {
        case .signedUp:
            guard let stored = try await store.profile(userID: user.id) else { throw Self.refusal(.noProfile) }
            return YediSlp.SignUpResponse(
                outcome: .signedUp,
                account: YediAccount.CompleteSignUpResponse(
                    user: AccountHandlers.user(user),
                    session: try account.credentials.sessions.session(for: user, refresh: refresh)),
                myPage: Self.myPage(stored))
        case .nicknameTaken:
            return YediSlp.SignUpResponse(outcome: .nicknameRefused, reason: "nickname: already in use")
        case .alreadyRegistered:
            return YediSlp.SignUpResponse(outcome: .alreadyRegistered)
        case .unknownTicket:
            throw Self.ticketRefused
        }
    }

    func getMe(_ request: YediSlp.GetMeRequest, context: ServerContext) async throws -> YediSlp.GetMeResponse {
        if case .user(let user) = context.caller {
            guard let profile = try await store.profile(userID: user.id) else {
                return YediSlp.GetMeResponse(outcome: .unregistered)
            }
            return YediSlp.GetMeResponse(outcome: .registered, myPage: Self.myPage(profile))
        }
        guard !request.ticket.isEmpty, request.ticket.utf8.count <= 200 else {
            throw RPCError(
                code: .unauthenticated, message: "sign-in required: send an access token or a sign-up ticket")
        }
        guard
            try await account.store.signUpTicket(
                hash: SHA256.hash(request.ticket), app: context.app, now: clock.nowMilliseconds) != nil
        else { throw Self.ticketRefused }
        return YediSlp.GetMeResponse(outcome: .unregistered)
    }
}
