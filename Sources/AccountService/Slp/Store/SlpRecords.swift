import Foundation

/// A member's SLP profile: what CreateProfile stores beside the platform's account (whose nickname it
/// shows) and what ratings and ended matches change.
struct SlpProfileRecord: Sendable, Hashable {
    var userID: String
    /// The account's nickname (read from the user row; never written through the profile).
    var nickname: String = ""
    /// `yedi.account.Gender`'s number: 1 female, 2 male.
    var gender: Int
    var birthDate: DateParts
    var email: String
    var favouriteStudy: String = ""
    var searchable = false
    var partnerMinAge = SlpRules.minimumAge
    var partnerMaxAge = SlpRules.maximumAge
    var avatar = 0
    var background = 0
    var ownedAvatars: [Int] = [0]
    var ownedBackgrounds: [Int] = [0]
    /// One counter per rating flag (`SlpRules.ratingFlags` of them).
    var reputation: [Int] = Array(repeating: 0, count: SlpRules.ratingFlags)
    /// The comments of the ratings received, newest first (filled on reads).
    var comments: [String] = []
    var dodgeCount = 0
    /// When the member last ended a match (EndMatch): the penalty counts from there.
    var lastDodgeAtMilliseconds: Int64?
    var createdAtMilliseconds: Int64
}

/// What UpdateMyPage replaces.
struct SlpProfileUpdate: Sendable, Hashable {
    var gender: Int
    var favouriteStudy: String
    var searchable: Bool
    var partnerMinAge: Int
    var partnerMaxAge: Int
    var avatar: Int
    var background: Int
}

/// A member's active match, as the member sees it.
struct SlpActiveMatch: Sendable, Hashable {
    var matchID: String
    var partnerID: String
}

/// Where a member stands: queued, matched, and how their last match went.
struct SlpStateRecord: Sendable, Hashable {
    var queued: Bool
    var active: SlpActiveMatch?
    var partnerNickname: String
    /// The newest match of the member, active or ended.
    var lastMatchID: String?
    /// The partner ended the last match (EndMatch).
    var dodged: Bool
    /// The member rated the last match.
    var rated: Bool
}

/// A queued member as a search shows them.
struct SlpPersonRecord: Sendable, Hashable {
    var userID: String
    var nickname: String
    var latitude: Double
    var longitude: Double
    var metres: Double
    var studies: [String]
    var reputation: [Int]
    var comments: [String]
    var gender: Int
    var avatar: Int
    var background: Int
}

struct SlpNearbyRecord: Sendable, Hashable {
    var people: [SlpPersonRecord]
    var requesters: [SlpPersonRecord]
}

enum SlpEnterOutcome: Sendable, Hashable {
    case entered
    case penalty(tier: Int, endsAtMilliseconds: Int64)
    case alreadyMatched(SlpActiveMatch)
}

enum SlpRequestOutcome: Sendable, Hashable {
    case sent
    case otherNotSearching
    /// The other had requested me: the new match's id.
    case matched(String)
    case alreadyMatched(SlpActiveMatch)
}

enum SlpAcceptOutcome: Sendable, Hashable {
    case matched(String)
    case otherMatched
    case otherNotSearching
    case alreadyMatched(SlpActiveMatch)
}

/// One side's rating of a match.
struct SlpRatingRecord: Sendable, Hashable {
    var matchID: String
    var raterID: String
    var flags: [Bool]
    var comment: String
    var createdAtMilliseconds: Int64
}

/// Refusals the handlers turn into statuses (each naming its field).
enum SlpStoreError: Error, Equatable {
    /// The caller has no SLP profile yet (CreateProfile first).
    case noProfile
    /// The named user is not an SLP member with a profile.
    case unknownUser
    /// The caller is not in the queue (Request and Accept need it).
    case notQueued
    /// Accept without a pending request from the other.
    case noRequest
    /// Rate: not a match of the caller's.
    case notYourMatch
    /// Rate: this side rated the match already.
    case alreadyRated
    /// UpdateMyPage: an avatar or background not owned ("avatar" or "background").
    case notOwned(String)
}

/// What SignUp creates in one transaction: the account (no password) of the ticket's identity, its first
/// session, the SLP profile and, when the app sent a push token, the device.
struct SlpSignUpRecord: Sendable {
    var ticket: SignUpTicketRecord
    var user: UserRecord
    var session: SessionRecord
    var profile: SlpProfileRecord
    var device: DeviceRecord?
    /// Devices a member keeps (the platform's quota).
    var keepDevices: Int
    var now: Int64
}

enum SlpSignUpOutcome: Sendable, Hashable {
    case signedUp
    /// The nickname is another SLP member's (the ticket stays).
    case nicknameTaken
    /// The identity has an account already, or the ticket was used by a SignUp.
    case alreadyRegistered
    /// The ticket is unknown, expired or another app's.
    case unknownTicket
}
