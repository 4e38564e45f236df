import RPCAccess
import ServiceRuntime
import YediProto

/// Where AccountService keeps Housetainer's members, invitations, terms and waitlist (docs/housetainer.md).
/// Handlers see only this protocol; every rule that must hold under concurrency (the invitation quota, a
/// code used once, a nickname taken once) is decided inside one transaction or by an index.
protocol HousetainerMemberStore: Sendable {
    /// The account of `app` signed in with `identity`, or else the one whose address is the identity's
    /// (the identity is then linked to it); nil for none.
    func signIn(identity: VerifiedIdentity, app: AppID, now: Int64) async throws -> String?
    /// The code of `app`, with its inviter's nickname; nil for none.
    func invitation(code: String, app: AppID) async throws -> InvitationRecord?
    /// Stores `invitation` with a code from `draw` (drawn again while it collides) and its mail, after
    /// counting the inviter's invitations in S (younger than `lifetime`) or J (none for an admin's code,
    /// which has no inviter): `quotaExceeded` at `quota`, `alreadyMember` when the invitee's address is a member's (or the inviter's own), in one
    /// transaction.
    func createInvitation(
        _ invitation: InvitationRecord, quota: Int, lifetime: Int64, draw: @escaping @Sendable () -> String,
        mail: @escaping @Sendable (InvitationRecord) -> YediRuntime.MailMessage
    ) async throws -> InvitationRecord
    /// The inviter's invitations, newest first.
    func invitations(inviterID: String, app: AppID) async throws -> [InvitationRecord]
    /// Creates the member (see `HousetainerSignUp`), or throws `ticketUnknown`, `codeUnknown`,
    /// `codeForAnotherAddress`, `codeUsed`, `nicknameTaken` or `identityTaken` with nothing written.
    func signUp(_ signUp: HousetainerSignUp) async throws
    /// Adds or updates the address's entry: true when added.
    func joinWaitlist(_ entry: WaitlistRecord) async throws -> Bool
    /// The app's waitlist, newest first, after `after` (created time and address).
    func waitlist(app: AppID, after: PagePosition<Int64>?, limit: Int) async throws -> [WaitlistRecord]
    /// A member's page; nil for no account of `app` with that id.
    func member(id: String, app: AppID) async throws -> HousetainerMemberRecord?
    /// Replaces the editable fields (`nicknameTaken`, `notFound`).
    func updateMember(id: String, app: AppID, _ update: HousetainerMemberUpdate) async throws
    /// Sets the member's type (`H`, `h` or `a`) and tells the directories (`notFound`).
    func setMemberType(id: String, app: AppID, type: String) async throws
}

/// What a Housetainer store refuses; the handlers turn each into its status.
enum HousetainerStoreError: Error, Equatable {
    case ticketUnknown
    case codeUnknown
    case codeForAnotherAddress
    /// J, or S past its lifetime.
    case codeUsed
    case quotaExceeded
    case alreadyMember
    case nicknameTaken
    case identityTaken
    case notFound
}
