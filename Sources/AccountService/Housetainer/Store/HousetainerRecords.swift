import RPCAccess

/// An invitation code as stored: S until the invitee joins (J); an S code older than the app's lifetime
/// reads as expired (`status(now:lifetime:)`), with no job and no write.
struct InvitationRecord: Sendable, Hashable {
    enum Status: String, Sendable {
        case sent = "S"
        case joined = "J"
        case expired = "E"
    }

    var id: String
    var app: AppID
    var code: String
    /// The member who invited; nil for a code an admin issued (`issuedBy`).
    var inviterID: String?
    var inviteeEmail: String
    var inviteeName: String
    /// S or J as stored; see `status(now:lifetime:)` for E.
    var stored: Status
    var createdAtMilliseconds: Int64
    var joinedAtMilliseconds: Int64? = nil
    /// The inviter's nickname, when read with it.
    var inviterNickname: String? = nil
    /// The admin who issued a code with no inviter (the first members of a community).
    var issuedBy: String? = nil

    /// S, J, or E for an S code at or past `createdAt + lifetime`.
    func status(now: Int64, lifetime: Int64) -> Status {
        stored == .sent && now >= createdAtMilliseconds + lifetime ? .expired : stored
    }
}

/// A member's page as stored: the account's nickname, gender and birthday beside Housetainer's type,
/// inviter and buddies (the nicknames of the members they invited).
struct HousetainerMemberRecord: Sendable, Hashable {
    var id: String
    var nickname: String
    /// H, h or a.
    var type: String
    var inviterNickname: String?
    /// The member was invited by someone who has since deleted their account.
    var inviterLeft: Bool
    var buddies: [String]
    var gender: Int
    var birthday: DateParts?
    /// ContentService's image id; "" for none.
    var photoImageID: String
    var createdAtMilliseconds: Int64
}

/// A Housetainer signup, written in one transaction: the ticket used up, the account with its identity
/// and first session, the member row, the code turned J (when one is given) and the accepted terms.
struct HousetainerSignUp: Sendable {
    var ticket: SignUpTicketRecord
    var user: UserRecord
    var session: SessionRecord
    /// nil when the app does not require a code.
    var code: String?
    /// An S code older than this (milliseconds) no longer signs anyone up.
    var codeLifetime: Int64
    /// kind → version.
    var terms: [String: String]
    var now: Int64
}

/// A waitlist entry (소식받기): one per address and app.
struct WaitlistRecord: Sendable, Hashable {
    var app: AppID
    var email: String
    var snsURL: String
    var instagramID: String
    var createdAtMilliseconds: Int64
    var updatedAtMilliseconds: Int64
}

/// What UpdateMember replaces.
struct HousetainerMemberUpdate: Sendable {
    /// 0 for none, 1 female, 2 male.
    var gender: Int
    var birthday: DateParts?
    var nickname: String
    var photoImageID: String
}
