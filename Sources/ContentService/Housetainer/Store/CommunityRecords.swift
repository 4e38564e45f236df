import RPCAccess

/// An event as stored, with its images in order and what the reading member sees of it.
struct EventRecord: Sendable, Hashable {
    var id: String
    var app: AppID
    var ownerID: String
    /// The client's id of its creation: a retry finds the event instead of making another.
    var clientID: String
    var title: String
    /// 1 host, 2 attendant.
    var scheduleType: Int
    var atMilliseconds: Int64
    var detail: String
    var link: String
    var imageIDs: [String]
    var displayed: Bool = false
    var createdAtMilliseconds: Int64
    var updatedAtMilliseconds: Int64
    /// Whether the reader bookmarked it.
    var bookmarked: Bool = false
    var commentCount: Int = 0
}

/// What an update replaces.
struct EventFieldsRecord: Sendable, Hashable {
    var title: String
    var scheduleType: Int
    var atMilliseconds: Int64
    var detail: String
    var link: String
    var imageIDs: [String]
}

/// Who reads: their id, app, and whether they are an admin (who sees undisplayed events).
struct CommunityReader: Sendable, Hashable {
    var id: String
    var app: AppID
    var isAdmin: Bool
}

/// What a comment is on: an event, or a house (홈레터).
enum CommentTarget: Sendable, Hashable {
    case event(String)
    case house(String)
}

struct CommentRecord: Sendable, Hashable {
    var id: String
    var app: AppID
    var target: CommentTarget
    var writerID: String
    var clientID: String
    var content: String
    var createdAtMilliseconds: Int64
}

/// The four notification types of the domain note.
enum CommunityNotificationType: Int, Sendable {
    /// event_bookmarks.insert → the owner.
    case eventBookmarked = 1
    /// event_comments.insert → the owner.
    case eventCommented = 2
    /// event_bookmarks.event_comments.insert → each bookmarker.
    case bookmarkedEventCommented = 3
    /// house_comments.insert → the house's owner.
    case houseCommented = 4
}

struct CommunityNotificationRecord: Sendable, Hashable {
    var id: Int64
    var type: CommunityNotificationType
    var actorID: String
    var target: CommentTarget
    var commentID: String?
    var read: Bool
    var createdAtMilliseconds: Int64
}

/// A page of events read with one extra row: the events and the positions of every row read.
struct EventPage: Sendable {
    var events: [EventRecord]
    var keys: [Int64]
}

/// An open house as stored, with its images in order.
struct HouseRecord: Sendable, Hashable {
    var id: String
    var app: AppID
    /// The member whose home it is.
    var ownerID: String
    /// The admin who created it, with their client id: a retry finds the house.
    var creatorID: String
    var clientID: String
    var fields: HouseFieldsRecord
    var displayed: Bool = false
    var createdAtMilliseconds: Int64
    var updatedAtMilliseconds: Int64
    var commentCount: Int = 0
}

/// What an admin writes of a house.
struct HouseFieldsRecord: Sendable, Hashable {
    var ownerID: String
    var name: String
    var title: String
    var content: String
    /// 1 artist, 2 creator, 3 space designer, 4 collector.
    var category: Int
    var imageIDs: [String]
    var coverIndex: Int
    var domestic: Bool
    var location: String
    var detailedLocation: String
}

/// The home screen's picks among displayed items, in the admins' order.
struct HomeRecord: Sendable {
    var moments: [EventRecord]
    var events: [EventRecord]
    var houses: [HouseRecord]
}
