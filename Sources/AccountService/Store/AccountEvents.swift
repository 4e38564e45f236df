import GRDB
import RPCCore
import ServiceRuntime
import YediProto

/// What the other services hear about accounts, and which of them hear it: outbox jobs the store writes
/// in the transaction of the change, so that nothing is told of a change that rolled back and nothing is
/// lost after one that committed. The SQL store says *when* (an account made, public fields changed, an
/// account deleted); this type alone says *who* gets *what*.
struct AccountEvents: Sendable {
    let outbox: Outbox

    /// The services that hold user data: each gets `RevokeUser` then `PurgeUser` when an account is
    /// deleted (per peer, jobs are delivered in order: the revocation, which waits for the user's running
    /// calls there, before the purge).
    static let purgedPeers:
        [(peer: String, method: RPCMethod<YediCommon.PurgeUserRequest, YediCommon.PurgeUserResponse>)] = [
            ("content", YediContent.ContentService.Method.purgeUser),
            ("booking", YediBooking.BookingService.Method.purgeUser),
            ("chat", YediChat.ChatService.Method.purgeUser),
        ]
    /// The services that show users' public fields next to their own data (a `UserDirectory`) and get
    /// `yedi.runtime.Users/UserChanged` when one changes.
    static let directoryPeers = ["content", "chat"]

    /// A new account: a designer is set up at BookingService (the schedule and menu start from the shop's
    /// hours, so Booking's reads never have to make them).
    func accountCreated(_ user: UserRecord, designer: DesignerRecord?, in db: Database) throws {
        guard let designer else { return }
        try outbox.enqueue(
            in: db, peer: "booking", method: YediBooking.BookingService.Method.setUpDesigner,
            request: YediBooking.SetUpDesignerRequest(
                designerID: user.id, openingHour: Int32(designer.shop.openingHour),
                closingHour: Int32(designer.shop.closingHour), timeZone: designer.shop.timeZone))
    }

    /// A user's name or profile image changed: the cached copies elsewhere (post authors, room members)
    /// are dropped once this commits.
    func publicFieldsChanged(userID: String, in db: Database) throws {
        for peer in Self.directoryPeers {
            try outbox.enqueue(
                in: db, peer: peer, method: YediRuntime.Users.Method.userChanged, request: .init(userID: userID))
        }
    }

    /// An account was deleted (and revoked here): every peer revokes the user, then purges their data.
    func accountDeleted(_ revocation: YediRuntime.RevokeUserRequest, in db: Database) throws {
        for (peer, method) in Self.purgedPeers {
            try outbox.enqueue(
                in: db, peer: peer, method: YediRuntime.Revocations.Method.revokeUser, request: revocation)
            try outbox.enqueue(in: db, peer: peer, method: method, request: .init(userID: revocation.userID))
        }
    }

    /// Two SLP members were matched: ChatService opens the match's room (its id is the match id).
    func matchStarted(matchID: String, members: (String, String), in db: Database) throws {
        try outbox.enqueue(
            in: db, peer: "chat", method: YediChat.ChatService.Method.openMatchRoom,
            request: YediChat.OpenMatchRoomRequest(matchID: matchID, memberA: members.0, memberB: members.1))
    }

    /// An SLP match ended (EndMatch or a first rating): ChatService closes its room (readable, no sends).
    func matchEnded(matchID: String, in db: Database) throws {
        try outbox.enqueue(
            in: db, peer: "chat", method: YediChat.ChatService.Method.closeMatchRoom,
            request: YediChat.CloseMatchRoomRequest(matchID: matchID))
    }

    /// A member was suspended or changed their password (and was revoked here): every peer refuses the
    /// tokens issued so far; their data stays.
    func tokensRevoked(_ revocation: YediRuntime.RevokeUserRequest, in db: Database) throws {
        for (peer, _) in Self.purgedPeers {
            try outbox.enqueue(
                in: db, peer: peer, method: YediRuntime.Revocations.Method.revokeUser, request: revocation)
        }
    }

    /// A mail to a person (sign-up codes and notices), sent by the outbox's mail sender.
    func mail(_ mail: YediRuntime.MailMessage, in db: Database) throws {
        try outbox.enqueue(in: db, mail: mail)
    }

    /// A text message (a phone code) to a number, sent by the outbox after the commit.
    func sms(_ sms: YediRuntime.SmsMessage, in db: Database) throws {
        _ = try outbox.enqueue(in: db, sms: sms)
    }
}
