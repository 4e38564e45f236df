import ServiceRuntime
import YediProto

/// What SignUp mails: a 6-digit code, at most so many mails to one address.
struct SignUpMailer: Sendable {
    let codes: any VerificationCodeGenerator
    /// Mails SignUp sends one address (a code or a notice), so nobody can use SignUp to flood a mailbox.
    /// Past it SignUp answers the same and sends nothing.
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
