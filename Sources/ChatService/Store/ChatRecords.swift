import RPCAccess

/// What ChatService stores, free of any engine's types: the store protocol speaks these.

/// An image as a message shows it (ContentService's reference, copied when the message was sent).
struct ImageRecord: Sendable, Hashable {
    var id: String
    var url: String
    var width: Int32
    var height: Int32
}

/// A message's content: exactly one kind.
enum MessageBodyRecord: Sendable, Hashable {
    case text(String)
    case image(ImageRecord)
    /// The post's title and first photo are copied at send time, so the bubble survives an edited post.
    case postShare(postID: String, title: String, firstPhoto: ImageRecord?, text: String)
    case reservation(id: String, startAtMilliseconds: Int64)
}

/// One member of a room and the part they take in it (`RoomRole`).
struct RoomMemberRecord: Sendable, Hashable {
    var userID: String
    var role: String
}

/// The parts members take in a room: YeDi's consult room has a customer and a designer; other apps'
/// rooms have plain members until their issues ask for more.
enum RoomRole {
    static let customer = "customer"
    static let designer = "designer"
    static let member = "member"
}

/// A room: its kind (one per app and purpose: YeDi's `consult`), its members (`chat_room_member`), and
/// whether it is closed (its messages stay readable, nobody sends any more).
struct RoomRecord: Sendable, Hashable {
    var id: String
    var kind: String
    /// In the order they joined.
    var memberships: [RoomMemberRecord]
    var createdAtMilliseconds: Int64
    /// The newest message's seq (0 while empty).
    var lastSeq: Int64
    var lastActivityAtMilliseconds: Int64
    /// When it was closed; nil while open.
    var closedAtMilliseconds: Int64?
    /// The app of its members; a member of another app never reaches it.
    var app: AppID = .yedi

    var members: [String] { memberships.map(\.userID) }

    /// The member of a consult room who is the customer ("" in rooms without one).
    var customerID: String { member(role: RoomRole.customer) }

    /// The member of a consult room who is the designer ("" in rooms without one).
    var designerID: String { member(role: RoomRole.designer) }

    var isClosed: Bool { closedAtMilliseconds != nil }

    func member(role: String) -> String { memberships.first { $0.role == role }?.userID ?? "" }

    /// The room as it was when created: what a room-created event shows, replayed or live.
    var asCreated: RoomRecord {
        var room = self
        room.lastSeq = 0
        room.lastActivityAtMilliseconds = createdAtMilliseconds
        room.closedAtMilliseconds = nil
        return room
    }

    func isMember(_ userID: String) -> Bool { memberships.contains { $0.userID == userID } }

    /// The other member of a two-member room (in a larger room, the first other one).
    func other(than userID: String) -> String { members.first { $0 != userID } ?? "" }

    static let consultKind = "consult"
    /// SLP: two matched members, each with the role `matchMemberRole`; the room id is the match id.
    static let slpMatchKind = "slp-match"

    /// The app a room of `kind` belongs to (stored on the row as `chat_room.app`).
    static func app(ofKind kind: String) -> AppID {
        kind == slpMatchKind ? "slp" : .yedi
    }
    static let matchMemberRole = "member"
}

struct MessageRecord: Sendable, Hashable {
    var id: String
    var roomID: String
    var seq: Int64
    var senderID: String
    var sentAtMilliseconds: Int64
    var clientMessageID: String?
    var body: MessageBodyRecord
}

/// A message to append; the store gives it its seq.
struct MessageDraft: Sendable, Hashable {
    var id: String
    var roomID: String
    var senderID: String
    var sentAtMilliseconds: Int64
    var clientMessageID: String?
    var body: MessageBodyRecord
    /// Members to push a new text message to (a match room's members without an open stream): the jobs
    /// are queued in the message's own transaction, so a stored message never loses its push.
    var pushTo: [String] = []
}

/// One page of a room's history with the members' read cursors read in the same snapshot.
struct MessagePage: Sendable, Hashable {
    var messages: [MessageRecord]
    var hasMore: Bool
    /// member id → read cursor
    var readSeqs: [String: Int64]
}

/// A room as the room list shows it to one member.
struct RoomSummaryRecord: Sendable, Hashable {
    var room: RoomRecord
    var lastMessage: MessageRecord?
    var unreadCount: Int64
    var myReadSeq: Int64
    var otherReadSeq: Int64
    /// Orders the list: the global event position of the room's last activity.
    var activityPosition: Int64
}

struct RoomListRecord: Sendable, Hashable {
    var rooms: [RoomSummaryRecord]
    var totalUnread: Int64
    /// The member's newest event position in the same snapshot.
    var headPosition: Int64
}

struct OpenedRoom: Sendable, Hashable {
    var room: RoomRecord
    var created: Bool
    var postShare: MessageRecord?
}

struct AppendedMessage: Sendable, Hashable {
    var message: MessageRecord
    /// True when a message with this client id existed: it is the original, nothing was added.
    var duplicate: Bool
}

struct ReadMark: Sendable, Hashable {
    var readSeq: Int64
    var moved: Bool
}

/// What a stream event says.
enum ChatEventBody: Sendable, Hashable {
    case messageAdded(MessageRecord)
    case readCursorMoved(roomID: String, readerID: String, readSeq: Int64, readAtMilliseconds: Int64)
    case roomCreated(RoomRecord)
    case roomClosed(roomID: String, closedAtMilliseconds: Int64)
}

/// One durable event for one recipient; positions grow in commit order over all recipients.
struct ChatEventRecord: Sendable, Hashable {
    var position: Int64
    var recipientID: String
    var body: ChatEventBody
}

enum ChatStoreError: Error, Equatable {
    case roomNotFound
    case notMember
    /// The room is closed: nothing more is sent in it.
    case roomClosed
}

/// What purging a user removed: the rooms they were in, and whether this delivery of the purge was the
/// first (its receipt recorded in the same transaction).
struct PurgedRooms: Sendable, Hashable {
    var roomIDs: [String]
    var firstDelivery: Bool
}
