import YediProto

/// The SMS `StartPhoneVerification` sends: the code, short enough for one message, and the values the
/// development files and the probe read it by.
enum PhoneCodeMessage {
    static let template = "phone-verification-code"

    static func sms(code: String, verificationID: String, to number: String, appName: String) -> YediRuntime.SmsMessage
    {
        YediRuntime.SmsMessage(
            to: number, text: "[\(appName)] 인증번호 \(code) (5분 안에 입력해 주세요)", template: template,
            values: [.init(name: "code", value: code), .init(name: "verification_id", value: verificationID)])
    }
}
