import YediProto

/// The mail that carries an invitation code to its invitee, queued in the invitation's transaction. It
/// names its inviter (`inviter_id`) so the development files of a deleted member's invitations go with
/// the account (`DevelopmentFileSender.forget` mentioning the user, as pushes naming them do).
enum HousetainerInvitationMail {
    static func invitation(_ invitation: InvitationRecord, inviter: String, days: Int) -> YediRuntime.MailMessage {
        YediRuntime.MailMessage(
            to: invitation.inviteeEmail, subject: "[Housetainer] \(inviter)님이 하우스테이너에 초대했습니다",
            text: """
                \(invitation.inviteeName)님, \(inviter)님이 하우스테이너에 초대했습니다.

                초대 코드: \(invitation.code)

                앱에서 이 이메일 주소의 계정으로 로그인한 뒤 초대 코드를 입력하세요. 코드는 \(days)일 동안 유효합니다.
                """,
            template: "housetainer-invitation",
            values: [
                .init(name: "code", value: invitation.code), .init(name: "invitation_id", value: invitation.id),
            ] + (invitation.inviterID.map { [.init(name: "inviter_id", value: $0)] } ?? []))
    }
}
