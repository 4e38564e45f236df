import RPCAccess
import RPCCore

/// A Zipadoo member as friends see them.
struct ZipadooMemberRecord: Sendable, Hashable {
    var userID: String
    var nickname: String
    var name: String
    var mole: String
    var profileImageID: String
}

/// The signed-in member's own profile.
struct ZipadooProfileRecord: Sendable, Hashable {
    var member: ZipadooMemberRecord
    var email: String
    var phone: String
    var createdAtMilliseconds: Int64
}

/// The refusals of the friend store, each its own status (`ZipadooFriendsHandlers.refusal`).
enum ZipadooFriendError: Error, Equatable {
    case noSuchNickname, yourself, alreadyFriends, alreadyRequested, theyRequested
    case notRecipient, noRequest, notFriends, unknownUser, emailTaken, nicknameTaken
}

/// Where AccountService keeps Zipadoo's members and friendships (docs/zipadoo.md). Each method decides
/// inside one write transaction, so concurrent requests and accepts of one pair end in one row.
protocol ZipadooFriendStore: Sendable {
    /// The user row (app zipadoo, role member), the mole and the first session, in one transaction
    /// (`emailTaken`, `nicknameTaken` from the unique indexes).
    func signUp(_ user: UserRecord, mole: String, session: SessionRecord) async throws
    func profile(userID: String) async throws -> ZipadooProfileRecord?
    /// Replaces image, nickname, phone and mole (`nicknameTaken`, `unknownUser`).
    func updateProfile(userID: String, imageID: String, nickname: String, phone: String, mole: String) async throws
        -> ZipadooProfileRecord
    /// A pending request from `from` to the member called exactly `nickname`, after the domain's checks
    /// in order; answers the recipient's id.
    func request(from: String, nickname: String, now: Int64) async throws -> String
    /// The recipient accepts `requester`'s pending request (`notRecipient` for its sender, `noRequest`,
    /// `alreadyFriends`).
    func accept(userID: String, requester: String, now: Int64) async throws
    /// The recipient drops `requester`'s pending request.
    func decline(userID: String, requester: String) async throws
    /// Ends an accepted friendship for both (`notFriends`).
    func remove(userID: String, friend: String) async throws
    /// Accepted friends by nickname.
    func friends(of userID: String) async throws -> [ZipadooMemberRecord]
    /// Pending requests to and from the member, oldest first.
    func requests(of userID: String) async throws -> (incoming: [ZipadooMemberRecord], outgoing: [ZipadooMemberRecord])
    /// Which of `candidates` are accepted friends of `userID`, in the order given.
    func friendIDs(of userID: String, among candidates: [String]) async throws -> [String]
}
