import Foundation
import RPCCore
import ServiceRuntime
import YediCrypto
import YediProto

/// Password reset by a mailed code, and a change with the current password (docs/account.md,
/// "Passwords"). Both end every session of the account and revoke its access tokens: a new password is
/// what someone does after a password leaked.
extension AccountHandlers {
    /// How long a mailed reset code works.
    static let passwordResetCodeLifetime: Int64 = 15 * 60 * 1_000
    /// Wrong codes a reset survives; then it must be requested again.
    static let passwordResetCodeAttempts = 5

    func requestPasswordReset(
        _ request: YediAccount.RequestPasswordResetRequest, context: ServerContext
    ) async throws -> YediAccount.RequestPasswordResetResponse {
        let email = try FieldRule.email(request.email)
        try admit(context)
        let now = clock.nowMilliseconds
        let answer = YediAccount.RequestPasswordResetResponse(
            resetID: ids.next(), codeExpiresAtMs: now + Self.passwordResetCodeLifetime)
        guard mailer.mailsPerRecipient.take(email, now: clock.now.timeIntervalSince1970).retryAfter == nil else {
            context.logger.notice(
                "password reset: mail to this address held back (too many)", metadata: ["to": "\(email)"])
            return answer
        }
        // A row either way, so an address without an account answers in the same time.
        let user = try await store.user(app: context.app, email: email).flatMap { $0.passwordHash == nil ? nil : $0 }
        let code = mailer.codes.next()
        try await store.startPasswordReset(
            PasswordResetRecord(
                id: answer.resetID, app: context.app, userID: user?.id,
                codeHash: Self.signUpCodeHash(code, id: answer.resetID),
                expiresAtMilliseconds: answer.codeExpiresAtMs, createdAtMilliseconds: now),
            mail: user.map { _ in PasswordMail.code(code, resetID: answer.resetID, to: email) })
        return answer
    }

    func resetPassword(
        _ request: YediAccount.ResetPasswordRequest, context: ServerContext
    ) async throws -> YediAccount.ResetPasswordResponse {
        let refused = RPCError(
            code: .unauthenticated, message: "code: wrong, expired or already used; ask for a new reset")
        guard !request.resetID.isEmpty, request.code.utf8.count == 6,
            request.code.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 })
        else { throw refused }
        try FieldRules.password(request.newPassword, field: "new_password")
        let address = try admit(context)
        guard
            let reset = try await store.checkPasswordResetCode(
                id: request.resetID, app: context.app, codeHash: Self.signUpCodeHash(request.code, id: request.resetID),
                now: clock.nowMilliseconds, maximumAttempts: Self.passwordResetCodeAttempts),
            let userID = reset.userID, let user = try await store.user(id: userID)
        else { throw refused }
        try Self.refuseIfSuspended(user, now: clock.nowMilliseconds)
        let session = try await replacePassword(
            of: user, with: request.newPassword, resetID: reset.id, address: address, context, refused: refused)
        return YediAccount.ResetPasswordResponse(user: Self.user(user), session: session)
    }

    func changePassword(
        _ request: YediAccount.ChangePasswordRequest, context: ServerContext
    ) async throws -> YediAccount.ChangePasswordResponse {
        let user = try await currentUser(context)
        guard user.passwordHash != nil, !user.email.isEmpty else {
            throw RPCError(
                code: .failedPrecondition, message: "current_password: this account signs in without a password")
        }
        try FieldRules.password(request.newPassword, field: "new_password")
        let address = try admit(context)
        guard !request.currentPassword.isEmpty, request.currentPassword.count <= 128,
            try await checkPassword(
                request.currentPassword, of: UserRecord.signInAccount(app: user.app, email: user.email),
                hash: user.passwordHash, address: address, context)
        else {
            throw RPCError(code: .permissionDenied, message: "current_password: wrong password")
        }
        let session = try await replacePassword(
            of: user, with: request.newPassword, resetID: nil, address: address, context,
            refused: RPCError(code: .notFound, message: "this account is gone"))
        return YediAccount.ChangePasswordResponse(session: session)
    }

    /// Hashes `password`, stores it with a new session (every other one ends) and answers that session.
    private func replacePassword(
        of user: UserRecord, with password: String, resetID: String?, address: String, _ context: ServerContext,
        refused: RPCError
    ) async throws -> YediAccount.Session {
        let hash = try await kdf {
            try await credentials.passwords.hash(password, key: address, deadline: context.deadline)
        }
        let refresh = credentials.sessions.newRefreshToken(userID: user.id)
        do {
            try await store.replacePassword(
                PasswordReplacement(
                    userID: user.id, passwordHash: hash, resetID: resetID, session: refresh.record,
                    revokedAtMilliseconds: Self.tokensRevokedUpTo(now: refresh.record.createdAtMilliseconds),
                    notice: user.email.isEmpty ? nil : PasswordMail.changed(to: user.email)))
        } catch AccountStoreError.notFound {
            throw refused
        }
        context.logger.info(
            "password replaced; every other session ended", metadata: ["user": "\(context.userTag(user.id))"])
        return try credentials.sessions.session(for: user, refresh: refresh)
    }

    /// The instant up to which a new password revokes the user's access tokens: the end of the previous
    /// whole second. Tokens carry their issue time in whole seconds, so revoking up to `now` would refuse
    /// the token issued with the new session in the same second; a token stolen within that second
    /// lives at most its 15 minutes (and its refresh token is ended).
    static func tokensRevokedUpTo(now: Int64) -> Int64 {
        (now / 1_000) * 1_000 - 1
    }
}
