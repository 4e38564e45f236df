import ServiceRuntime
import YediProto

/// What sign-up and password reset mail: a 6-digit code, at most so many mails to one address.
struct CodeMailer: Sendable {
    let codes: any VerificationCodeGenerator
    /// Mails SignUp and RequestPasswordReset together send one address (a code or a notice), so nobody
    /// can use them to flood a mailbox. Past it they answer the same and send nothing.
    let mailsPerRecipient: SharedRateLimiter<String>
}

/// The two mails SignUp sends, one of which every SignUp sends: the code for a new account, or a notice
/// to an address that has one (whoever asked learns nothing; the owner learns someone tried).
enum SignUpMail {
    static func code(_ code: String, verificationID: String, to email: String) -> YediRuntime.MailMessage {
        YediRuntime.MailMessage(
            to: email, subject: "[Yedi] 가입 인증 코드 \(code)",
            text: """
                Yedi 가입을 마치려면 앱에 아래 인증 코드를 입력하세요. 코드는 15분 동안 유효합니다.

                인증 코드: \(code)

                가입을 요청하지 않으셨다면 이 메일을 무시하세요.
                """,
            template: "sign-up-code",
            values: [.init(name: "code", value: code), .init(name: "verification_id", value: verificationID)])
    }

    static func existingAccount(to email: String) -> YediRuntime.MailMessage {
        YediRuntime.MailMessage(
            to: email, subject: "[Yedi] 이미 가입된 이메일입니다",
            text: """
                누군가 이 이메일 주소로 Yedi 가입을 시도했습니다. 이 주소로 가입된 계정이 이미 있습니다.

                본인이라면 앱에서 로그인하세요. 본인이 아니라면 이 메일을 무시하셔도 됩니다. 계정은 안전합니다.
                """,
            template: "sign-up-existing-account")
    }
}

/// The mails of a password reset: the code (only to an address with an account), and the notice that the
/// password changed (after a reset or a change), so an owner who did not do it knows at once.
enum PasswordMail {
    static func code(_ code: String, resetID: String, to email: String) -> YediRuntime.MailMessage {
        YediRuntime.MailMessage(
            to: email, subject: "[Yedi] 비밀번호 재설정 코드 \(code)",
            text: """
                Yedi 비밀번호를 재설정하려면 앱에 아래 코드를 입력하세요. 코드는 15분 동안 유효합니다.

                재설정 코드: \(code)

                요청하지 않으셨다면 이 메일을 무시하세요. 비밀번호는 바뀌지 않습니다.
                """,
            template: "password-reset-code",
            values: [.init(name: "code", value: code), .init(name: "reset_id", value: resetID)])
    }

    static func changed(to email: String) -> YediRuntime.MailMessage {
        YediRuntime.MailMessage(
            to: email, subject: "[Yedi] 비밀번호가 변경되었습니다",
            text: """
                Yedi 계정의 비밀번호가 변경되었고, 모든 기기에서 로그아웃되었습니다.

                본인이 변경하지 않았다면 즉시 비밀번호 재설정을 진행하고 고객센터에 알려 주세요.
                """,
            template: "password-changed")
    }
}
