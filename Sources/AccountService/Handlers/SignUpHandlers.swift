import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import YediCrypto
import YediProto

/// Sign-up in two steps, so that it cannot tell anyone whether an address has an account: `SignUp`
/// answers the same either way and mails the address (a code, or a notice that it has an account);
/// `CompleteSignUp` with the mailed code creates the account (docs/account.md, "Sign-up").
extension AccountHandlers {
    /// How long a mailed code works.
    static let signUpCodeLifetime: Int64 = 15 * 60 * 1_000
    /// Wrong codes a sign-up survives; then it must start again (and the address gets a new mail).
    static let signUpCodeAttempts = 5

    func signUp(_ request: YediAccount.SignUpRequest, context: ServerContext) async throws -> YediAccount.SignUpResponse
    {
        let email = try FieldRule.email(request.email)
        try FieldRules.password(request.password)
        _ = try newAccount(request, id: "", email: email)
        let address = try admit(context)
        // Hashed whether or not the address has an account: both answers take the same time.
        let passwordHash = try await kdf {
            try await credentials.passwords.hash(request.password, key: address, deadline: context.deadline)
        }
        let now = clock.nowMilliseconds
        let answer = YediAccount.SignUpResponse(
            verificationID: ids.next(), codeExpiresAtMs: now + Self.signUpCodeLifetime)
        guard mailer.mailsPerRecipient.take(email, now: clock.now.timeIntervalSince1970).retryAfter == nil else {
            context.logger.notice("sign-up: mail to this address held back (too many)", metadata: ["to": "\(email)"])
            return answer
        }
        if try await store.user(app: context.app, email: email) != nil {
            try await store.startSignUp(nil, mail: SignUpMail.existingAccount(to: email))
            return answer
        }
        let code = mailer.codes.next()
        var details = request
        details.password = ""
        try await store.startSignUp(
            PendingSignUpRecord(
                id: answer.verificationID, email: email, app: context.app, request: try details.serializedBytes(),
                passwordHash: passwordHash, codeHash: Self.signUpCodeHash(code, id: answer.verificationID),
                expiresAtMilliseconds: answer.codeExpiresAtMs, createdAtMilliseconds: now),
            mail: SignUpMail.code(code, verificationID: answer.verificationID, to: email))
        return answer
    }

    func completeSignUp(
        _ request: YediAccount.CompleteSignUpRequest, context: ServerContext
    ) async throws -> YediAccount.CompleteSignUpResponse {
        let refused = RPCError(
            code: .unauthenticated, message: "code: wrong, expired or already used; sign up again for a new code")
        guard !request.verificationID.isEmpty, request.code.utf8.count == 6, request.code.allSatisfy(\.isASCIIDigit)
        else { throw refused }
        try admit(context)
        guard
            let pending = try await store.checkSignUpCode(
                id: request.verificationID, codeHash: Self.signUpCodeHash(request.code, id: request.verificationID),
                now: clock.nowMilliseconds, maximumAttempts: Self.signUpCodeAttempts)
        else { throw refused }
        var (user, designer) = try newAccount(
            try YediAccount.SignUpRequest(serializedBytes: pending.request), id: ids.next(), email: pending.email)
        user.passwordHash = pending.passwordHash
        user.app = pending.app
        let refresh = credentials.sessions.newRefreshToken(userID: user.id)
        do {
            try await store.completeSignUp(id: pending.id, user: user, designer: designer, session: refresh.record)
        } catch AccountStoreError.notFound, AccountStoreError.emailTaken {
            throw refused
        }
        return YediAccount.CompleteSignUpResponse(
            user: Self.user(user),
            session: try credentials.sessions.session(for: user, refresh: refresh))
    }

    /// The account `request` describes, every field checked (the password is checked and hashed apart).
    func newAccount(
        _ request: YediAccount.SignUpRequest, id: String, email: String
    ) throws(RPCError) -> (UserRecord, DesignerRecord?) {
        let role: UserRole
        switch request.role {
        case .customer: role = .customer
        case .designer: role = .designer
        default: throw FieldRules.invalid("role", "choose customer or designer")
        }
        let user = UserRecord(
            id: id, role: role, email: email, name: try FieldRule.name(request.name, field: "name"),
            phone: try FieldRule.mobilePhone(request.phone), gender: try FieldRules.gender(request.gender),
            birthDate: try FieldRules.birthDate(request.birthDate, today: clock.now), passwordHash: "",
            createdAtMilliseconds: clock.nowMilliseconds)
        guard role == .designer else {
            if request.designer != nil { throw FieldRules.invalid("designer", "only for a designer") }
            return (user, nil)
        }
        guard let profile = request.designer else { throw FieldRules.invalid("designer", "required for a designer") }
        return (
            user,
            DesignerRecord(
                userID: id,
                description: try FieldRules.text(profile.description, field: "designer.description", maximum: 1_000),
                skills: try FieldRules.skills(profile.skills, field: "designer.skills"),
                rank: try FieldRules.rank(profile.rank, field: "designer.rank"),
                shop: try FieldRules.shop(profile.shop, field: "designer.shop"))
        )
    }

    /// What the database keeps of a code: keyed by the sign-up, so one hash says nothing about another.
    static func signUpCodeHash(_ code: String, id: String) -> [UInt8] {
        HMACSHA256.mac(key: Array(id.utf8), Array(code.utf8))
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
