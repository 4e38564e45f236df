import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// `yedi.housetainer.Community`: Housetainer's events, bookmarks, comments, notifications and blocks
/// (docs/housetainer.md). Images are ContentService's own (`ContentHandlers`): an event shows 1–10 of
/// its owner's uploads, pinned so unreferenced-image collection keeps them.
struct CommunityHandlers: YediHousetainer.Community.ServiceProtocol, HandlerKitUser {
    let content: ContentHandlers
    let store: any CommunityStore
    /// Nicknames, photos and types of owners, writers and actors.
    let authors: CommunityAuthors

    var kit: HandlerKit { content.kit }

    // MARK: Events

    func createEvent(_ request: YediHousetainer.CreateEventRequest, context: ServerContext) async throws
        -> YediHousetainer.Event
    {
        let reader = try self.reader(context)
        let clientID = try FieldRule.id(request.clientID, field: "client_id")
        let fields = try CommunityFields.event(request.fields ?? .init())
        try await ownImages(fields.imageIDs, reader: reader, context: context)
        let now = clock.nowMilliseconds
        let event = try await store.createEvent(
            EventRecord(
                id: ids.next(), app: reader.app, ownerID: reader.id, clientID: clientID, title: fields.title,
                scheduleType: fields.scheduleType, atMilliseconds: fields.atMilliseconds, detail: fields.detail,
                link: fields.link, imageIDs: fields.imageIDs, createdAtMilliseconds: now, updatedAtMilliseconds: now))
        return try await messages([event]).first ?? .init()
    }

    func updateEvent(_ request: YediHousetainer.UpdateEventRequest, context: ServerContext) async throws
        -> YediHousetainer.Event
    {
        let reader = try self.reader(context)
        let id = try FieldRule.id(request.eventID, field: "event_id")
        let fields = try CommunityFields.event(request.fields ?? .init())
        // Whose event it is before whose images: another member learns nothing from the images' checks.
        guard let current = try await store.event(id: id, reader: reader) else {
            throw Self.refusal(.notFound, field: "event_id")
        }
        guard current.ownerID == reader.id else { throw Self.refusal(.notOwner, field: "event_id") }
        try await ownImages(fields.imageIDs, reader: reader, context: context)
        try await mapped("event_id") {
            try await store.updateEvent(id: id, fields, reader: reader, now: clock.nowMilliseconds)
        }
        return try await event(id, reader: reader)
    }

    func deleteEvent(_ request: YediHousetainer.EventRequest, context: ServerContext) async throws
        -> YediHousetainer.DeleteEventResponse
    {
        let reader = try self.reader(context)
        let id = try FieldRule.id(request.eventID, field: "event_id")
        try await mapped("event_id") { try await store.deleteEvent(id: id, reader: reader) }
        return .init()
    }

    func getEvent(_ request: YediHousetainer.EventRequest, context: ServerContext) async throws
        -> YediHousetainer.Event
    {
        try await event(try FieldRule.id(request.eventID, field: "event_id"), reader: try reader(context))
    }

    func setEventDisplay(_ request: YediHousetainer.SetEventDisplayRequest, context: ServerContext) async throws
        -> YediHousetainer.Event
    {
        let admin = try context.requireOperator(of: apps)
        let id = try FieldRule.id(request.eventID, field: "event_id")
        try await mapped("event_id") {
            try await store.setDisplay(
                eventID: id, displayed: request.displayed, app: admin.app, now: clock.nowMilliseconds)
        }
        return try await event(id, reader: try reader(context))
    }

    func listEvents(_ request: YediHousetainer.ListEventsRequest, context: ServerContext) async throws
        -> YediHousetainer.ListEventsResponse
    {
        let reader = try self.reader(context)
        let period = try FieldRule.choice(
            request.period, field: "period", allowed: [.ongoing, .past], names: "ongoing or past")
        let ongoing = period == .ongoing
        let list = kit.pageList(ongoing ? "housetainer-events-ongoing" : "housetainer-events-past", defaultLimit: 10)
        let (after, limit) = try list.read(request.page, as: Int64.self)
        let page = try await store.events(
            ongoing: ongoing, now: clock.nowMilliseconds, reader: reader, after: after, limit: limit + 1)
        return try await response(page, limit: limit, list: list)
    }

    func listMemberEvents(_ request: YediHousetainer.ListMemberEventsRequest, context: ServerContext) async throws
        -> YediHousetainer.ListEventsResponse
    {
        let reader = try self.reader(context)
        let member = try FieldRule.id(request.memberID, field: "member_id")
        let list = kit.pageList("housetainer-member-events", defaultLimit: 10)
        let (after, limit) = try list.read(request.page, as: Int64.self)
        let page = try await store.memberEvents(memberID: member, reader: reader, after: after, limit: limit + 1)
        return try await response(page, limit: limit, list: list)
    }

    func listMyBookmarks(_ request: YediHousetainer.ListMyBookmarksRequest, context: ServerContext) async throws
        -> YediHousetainer.ListEventsResponse
    {
        let reader = try self.reader(context)
        let list = kit.pageList("housetainer-bookmarks", defaultLimit: 10)
        let (after, limit) = try list.read(request.page, as: Int64.self)
        let page = try await store.bookmarkedEvents(reader: reader, after: after, limit: limit + 1)
        return try await response(page, limit: limit, list: list)
    }

    // MARK: Bookmarks

    func bookmark(_ request: YediHousetainer.EventRequest, context: ServerContext) async throws
        -> YediHousetainer.BookmarkResponse
    {
        let reader = try self.reader(context)
        let id = try FieldRule.id(request.eventID, field: "event_id")
        return .init(
            changed: try await mapped("event_id") {
                try await store.bookmark(eventID: id, reader: reader, now: clock.nowMilliseconds)
            })
    }

    func unbookmark(_ request: YediHousetainer.EventRequest, context: ServerContext) async throws
        -> YediHousetainer.BookmarkResponse
    {
        let reader = try self.reader(context)
        let id = try FieldRule.id(request.eventID, field: "event_id")
        return .init(changed: try await mapped("event_id") { try await store.unbookmark(eventID: id, reader: reader) })
    }

    // MARK: Comments

    func addComment(_ request: YediHousetainer.AddCommentRequest, context: ServerContext) async throws
        -> YediHousetainer.Comment
    {
        let reader = try self.reader(context)
        let clientID = try FieldRule.id(request.clientID, field: "client_id")
        let target = try CommunityFields.target(request.target)
        let content = try CommunityFields.comment(request.content)
        let comment = try await mapped(CommunityFields.field(target)) {
            try await store.addComment(
                CommentRecord(
                    id: ids.next(), app: reader.app, target: target, writerID: reader.id, clientID: clientID,
                    content: content, createdAtMilliseconds: clock.nowMilliseconds),
                reader: reader)
        }
        return Self.message(comment, writer: await authors.authors([comment.writerID])[comment.writerID])
    }

    func listComments(_ request: YediHousetainer.ListCommentsRequest, context: ServerContext) async throws
        -> YediHousetainer.ListCommentsResponse
    {
        let reader = try self.reader(context)
        let target = try CommunityFields.target(request.target)
        let list = kit.pageList("housetainer-comments")
        let (after, limit) = try list.read(request.page, as: Int64.self)
        let comments = try await mapped(CommunityFields.field(target)) {
            try await store.comments(on: target, reader: reader, after: after, limit: limit + 1)
        }
        let writers = await authors.authors(comments.prefix(limit).map(\.writerID))
        return YediHousetainer.ListCommentsResponse(
            comments: comments.prefix(limit).map { Self.message($0, writer: writers[$0.writerID]) },
            page: list.next(comments.map { PagePosition(key: $0.createdAtMilliseconds, id: $0.id) }, limit: limit))
    }

    func deleteComment(_ request: YediHousetainer.DeleteCommentRequest, context: ServerContext) async throws
        -> YediHousetainer.DeleteCommentResponse
    {
        let reader = try self.reader(context)
        let id = try FieldRule.id(request.commentID, field: "comment_id")
        try await mapped("comment_id") { try await store.deleteComment(id: id, reader: reader) }
        return .init()
    }

    // MARK: Notifications

    func listNotifications(_ request: YediHousetainer.ListNotificationsRequest, context: ServerContext) async throws
        -> YediHousetainer.ListNotificationsResponse
    {
        let reader = try self.reader(context)
        let list = kit.pageList("housetainer-notifications", defaultLimit: 10)
        let (after, limit) = try list.read(request.page, as: Int64.self)
        let (notifications, unread) = try await store.notifications(
            reader: reader, after: after?.key, limit: limit + 1)
        let actors = await authors.authors(notifications.prefix(limit).map(\.actorID))
        return YediHousetainer.ListNotificationsResponse(
            notifications: notifications.prefix(limit).map {
                YediHousetainer.Notification(
                    id: String($0.id), type: YediHousetainer.NotificationType(rawValue: Int32($0.type.rawValue)),
                    actorID: $0.actorID, eventID: SQLiteCommunityStore.columns($0.target).event ?? "",
                    commentID: $0.commentID ?? "", read: $0.read, createdAtMs: $0.createdAtMilliseconds,
                    houseID: SQLiteCommunityStore.columns($0.target).house ?? "", actor: actors[$0.actorID])
            },
            unreadCount: Int32(unread),
            page: list.next(notifications.map { PagePosition(key: $0.id) }, limit: limit))
    }

    func markNotificationsRead(
        _ request: YediHousetainer.MarkNotificationsReadRequest, context: ServerContext
    ) async throws -> YediHousetainer.MarkNotificationsReadResponse {
        let reader = try self.reader(context)
        let upTo = try CommunityFields.notificationID(request.upToID, field: "up_to_id")
        return .init(unreadCount: Int32(try await store.markRead(upTo: upTo, reader: reader)))
    }

    // MARK: Blocks

    func block(_ request: YediHousetainer.BlockRequest, context: ServerContext) async throws
        -> YediHousetainer.BlockResponse
    {
        let reader = try self.reader(context)
        let member = try other(request.memberID, reader: reader)
        try await requireMember(member, field: "member_id")
        return .init(changed: try await store.block(member, reader: reader, now: clock.nowMilliseconds))
    }

    func unblock(_ request: YediHousetainer.BlockRequest, context: ServerContext) async throws
        -> YediHousetainer.BlockResponse
    {
        let reader = try self.reader(context)
        let member = try other(request.memberID, reader: reader)
        return .init(changed: try await store.unblock(member, reader: reader))
    }
}
