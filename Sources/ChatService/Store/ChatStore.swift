import RPCAccess
import ServiceRuntime

/// Where ChatService keeps its data. Handlers see only this protocol (`SQLiteChatStore` is the SQLite
/// one), so a second engine can replace it and `ChatStoreContract` runs against both.
///
/// Every method is one transaction. Every write that changes what a member sees also appends the stream
/// events for it in the same transaction (one row per recipient), and hands them to the store's event
/// sink **after** the commit and in position order: live delivery never shows what was rolled back, and
/// never reorders.
protocol ChatStore: Sendable {
    /// The pair's **open** room of `kind`, created (with `newRoomID`, the customer and the designer as
    /// members) if there is none; then, if given, appends `postShare` (idempotent by its client id).
    /// Concurrent calls for one pair get one room: at most one open room of a kind per pair is a rule of
    /// the schema, not a lookup. Once that room is closed, the next call opens a new one. Creating one when
    /// the rooms the customer opened this Seoul day reach `quota` throws `QuotaExceeded` (counted in the
    /// same transaction); an existing room is always answered.
    func openRoom(
        kind: String, customerID: String, designerID: String, newRoomID: String, now: Int64,
        postShare: MessageDraft?, quota: Quota?
    ) async throws -> OpenedRoom
    /// A new room of `kind` with `members` (distinct users, at least one), each told by a room-created
    /// event: for rooms no single user opens (an app's match, a promise's group). No uniqueness rule.
    func createRoom(id: String, kind: String, members: [RoomMemberRecord], now: Int64) async throws -> RoomRecord
    /// Closes the room: its messages stay readable and its cursors movable, sends fail with
    /// `ChatStoreError.roomClosed`. Closing a closed room changes nothing (it keeps its first closing
    /// time). `ChatStoreError.roomNotFound`.
    func closeRoom(id: String, now: Int64) async throws -> RoomRecord
    func room(id: String) async throws -> RoomRecord?
    /// Appends with the next seq, or returns the original if the sender already sent this client id. A new
    /// text message's `pushTo` members (of the room, not the sender) get their push queued in the same
    /// transaction.
    /// `ChatStoreError.roomNotFound` / `.notMember` / `.roomClosed` (a retry of a message sent before the
    /// room closed still gets its original).
    func appendMessage(_ draft: MessageDraft) async throws -> AppendedMessage
    /// Newest first: messages with seq < `beforeSeq` (all if nil).
    func messages(roomID: String, beforeSeq: Int64?, limit: Int) async throws -> MessagePage
    /// Oldest first: messages with seq > `afterSeq`.
    func messages(roomID: String, afterSeq: Int64, limit: Int) async throws -> MessagePage
    /// Moves `userID`'s cursor to `upToSeq` (0 or past the end = the last message); never backwards.
    func markRead(roomID: String, userID: String, upToSeq: Int64, now: Int64) async throws -> ReadMark
    /// Messages from others after the member's cursor: in one room (nil if not a member), and in all.
    func unreadCount(roomID: String, userID: String) async throws -> Int64?
    func totalUnread(userID: String) async throws -> Int64
    /// The member's rooms of `app` by last activity, newest first, after `afterActivity` (a previous page's
    /// last).
    func rooms(userID: String, app: AppID, afterActivity: Int64?, limit: Int) async throws -> RoomListRecord
    /// The highest event position ever given out to `recipientID` (purged events included): they cannot
    /// have seen more. Positions are per recipient, only grow and are never reused; a store may keep one
    /// counter for everyone (SQLite does), which bounds each recipient's too.
    func highestPosition(recipientID: String) async throws -> Int64
    /// The highest position of the recipient's events that pruning removed (0: none): a resume from before
    /// it would miss some.
    func prunedThrough(recipientID: String) async throws -> Int64
    /// Deletes the events created before `createdBefore` (a prefix of positions: it stops at the first
    /// newer one) and records, per recipient, the highest position it removed; answers how many.
    func pruneEvents(createdBefore: Int64) async throws -> Int
    /// The recipient's events after `position`, oldest first.
    func events(recipientID: String, afterPosition position: Int64, limit: Int) async throws -> [ChatEventRecord]
    /// `events`, then `prunedThrough` (a stream's catch-up reads both; see `StreamEventLog`).
    func eventsAndWatermark(recipientID: String, afterPosition position: Int64, limit: Int) async throws -> (
        events: [ChatEventRecord], prunedThrough: Int64
    )
    /// `highestPosition`, then `eventsAndWatermark` (a stream's first read; see `StreamEventLog`).
    func eventsWatermarkAndHead(recipientID: String, afterPosition position: Int64, limit: Int) async throws -> (
        events: [ChatEventRecord], prunedThrough: Int64, highestPosition: Int64
    )
    /// Deletes every room `userID` is a member of (both sides), their messages, and the events of those
    /// rooms and of the user, recording `delivery` (an outbox job's) in the same transaction. Returns the
    /// rooms removed; idempotent.
    func purgeUser(userID: String, delivery: Delivery?, now: Int64) async throws -> PurgedRooms
}

extension ChatStore {
    /// Two reads, the watermark after the events (SQLite: each is cheap, in the process).
    func eventsAndWatermark(recipientID: String, afterPosition position: Int64, limit: Int) async throws -> (
        events: [ChatEventRecord], prunedThrough: Int64
    ) {
        let events = try await events(recipientID: recipientID, afterPosition: position, limit: limit)
        return (events, try await prunedThrough(recipientID: recipientID))
    }

    /// Three reads, in `StreamEventLog`'s order.
    func eventsWatermarkAndHead(recipientID: String, afterPosition position: Int64, limit: Int) async throws -> (
        events: [ChatEventRecord], prunedThrough: Int64, highestPosition: Int64
    ) {
        let head = try await highestPosition(recipientID: recipientID)
        let (events, prunedThrough) = try await eventsAndWatermark(
            recipientID: recipientID, afterPosition: position, limit: limit)
        return (events, prunedThrough, head)
    }

    /// Without a quota (store tests about rooms themselves).
    func openRoom(
        kind: String, customerID: String, designerID: String, newRoomID: String, now: Int64,
        postShare: MessageDraft?
    ) async throws -> OpenedRoom {
        try await openRoom(
            kind: kind, customerID: customerID, designerID: designerID, newRoomID: newRoomID, now: now,
            postShare: postShare, quota: nil)
    }
}

/// Receives committed events, each recipient's in position order (called on the store's writer, so keep it
/// short).
typealias ChatEventSink = @Sendable ([ChatEventRecord]) -> Void
