import RPCAccess
import ServiceRuntime

/// Where ContentService keeps Housetainer's events, bookmarks, comments, notifications and blocks
/// (docs/housetainer.md). Handlers see only this protocol. A write and the notifications it causes
/// commit together; every list leaves out what the reader may not see (undisplayed events of others,
/// members the reader blocked) inside its query, so pages stay full.
protocol CommunityStore: Sendable {
    /// Stores `event` (images in order), or answers the event the owner created with the same client id.
    func createEvent(_ event: EventRecord) async throws -> EventRecord
    /// The event as `reader` sees it; nil when it does not exist for them (another's undisplayed event,
    /// another app's, a blocked owner's).
    func event(id: String, reader: CommunityReader) async throws -> EventRecord?
    /// Replaces the owner's event's fields (`notFound`, `notOwner`).
    func updateEvent(id: String, _ fields: EventFieldsRecord, reader: CommunityReader, now: Int64) async throws
    /// Deletes the owner's event with what hangs on it (`notFound`, `notOwner`).
    func deleteEvent(id: String, reader: CommunityReader) async throws
    /// Sets the display flag (`notFound`).
    func setDisplay(eventID: String, displayed: Bool, app: AppID, now: Int64) async throws
    /// Displayed events (and the reader's own) at or after `now` soonest first, or before it latest
    /// first, after `after` (at, id), at most `limit`.
    func events(
        ongoing: Bool, now: Int64, reader: CommunityReader, after: PagePosition<Int64>?, limit: Int
    ) async throws -> EventPage
    /// `memberID`'s events newest first (created, id).
    func memberEvents(memberID: String, reader: CommunityReader, after: PagePosition<Int64>?, limit: Int)
        async throws -> EventPage
    /// The reader's bookmarked events, most recently bookmarked first (bookmark time, event id).
    func bookmarkedEvents(reader: CommunityReader, after: PagePosition<Int64>?, limit: Int) async throws -> EventPage
    /// Bookmarks the event once (`notFound`), notifying its owner unless the owner bookmarks: true when
    /// it was not bookmarked.
    func bookmark(eventID: String, reader: CommunityReader, now: Int64) async throws -> Bool
    func unbookmark(eventID: String, reader: CommunityReader) async throws -> Bool
    /// Stores the comment (or answers the writer's comment with the same client id) and notifies the
    /// owner and (on an event) each bookmarker once, never the writer, nobody who blocked the writer
    /// (`notFound`).
    func addComment(_ comment: CommentRecord, reader: CommunityReader) async throws -> CommentRecord
    /// The target's comments newest first (created, id), without blocked writers (`notFound`).
    func comments(on target: CommentTarget, reader: CommunityReader, after: PagePosition<Int64>?, limit: Int)
        async throws -> [CommentRecord]
    /// Deletes a comment of the reader's (any, for an admin) with its notifications (`notFound`, `notOwner`).
    func deleteComment(id: String, reader: CommunityReader) async throws
    /// The reader's notifications newest first, after the id `after`, without blocked actors; and the
    /// unread count under the same filter.
    func notifications(reader: CommunityReader, after: Int64?, limit: Int) async throws
        -> (notifications: [CommunityNotificationRecord], unread: Int)
    /// Marks read `upTo` and every older notification of the reader: the unread count left.
    func markRead(upTo: Int64, reader: CommunityReader) async throws -> Int
    /// Stores an admin's house (or answers the one they created with the same client id), not displayed.
    func createHouse(_ house: HouseRecord) async throws -> HouseRecord
    /// Replaces a house's fields (`notFound`).
    func updateHouse(id: String, _ fields: HouseFieldsRecord, app: AppID, now: Int64) async throws
    func setHouseDisplay(houseID: String, displayed: Bool, app: AppID, now: Int64) async throws
    /// The house as `reader` sees it: displayed, their own, or any for an admin; not a blocked owner's.
    func house(id: String, reader: CommunityReader) async throws -> HouseRecord?
    /// Houses newest first (created, id), of `category` when given, and of `ownerID` when given.
    func houses(
        category: Int?, ownerID: String?, reader: CommunityReader, after: PagePosition<Int64>?, limit: Int
    ) async throws -> [HouseRecord]
    /// Replaces the app's picks (`notFound` for an id that is no event or house of the app).
    func setPicks(moments: [String], events: [String], houses: [String], app: AppID) async throws
    /// The picks the reader may see, in order.
    func home(reader: CommunityReader) async throws -> HomeRecord
    /// Blocks or unblocks; true when it changed something.
    func block(_ memberID: String, reader: CommunityReader, now: Int64) async throws -> Bool
    func unblock(_ memberID: String, reader: CommunityReader) async throws -> Bool
}

/// What a community store refuses; the handlers turn each into its status.
enum CommunityStoreError: Error, Equatable {
    case notFound
    /// The event or comment exists for the reader, but is not theirs.
    case notOwner
}
