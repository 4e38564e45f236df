import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// `yedi.chat.ChatService`: the handlers. Access rules are in the proto and enforced before these run;
/// handlers check membership (only a room's members read, send or mark read) and validate fields.
struct ChatHandlers: YediChat.ChatService.ServiceProtocol, HandlerKitUser {
    let store: any ChatStore
    let peers: ChatPeers
    let cache: HistoryCache
    let hub: ChatEventHub
    /// Who has a stream open (the hub; on PostgreSQL also the other replicas' lists): a match room's
    /// member without one gets a push.
    let presence: any StreamPresence
    /// History pages show chat photos by their current signed URLs.
    let photos: PhotoURLRefresher
    /// The clock, ids, quotas, lists, and the directory of room members' names and images
    /// (AccountService's, cached; empty when it cannot answer).
    let kit: HandlerKit
    /// Live events are wake-ups, read from the store (several replicas on PostgreSQL).
    var liveFromLog = false
    /// How many streams read the store at once (PostgreSQL: part of the pool); nil: no limit.
    var streamReads: StreamReadLimit? = nil

    /// A user's rooms, most recent activity first (the key is the room's last position in the stream).
    var roomPages: PageList { kit.pageList("rooms", defaultLimit: 20, maximumLimit: Self.maxPageSize) }

    static let maxTextCharacters = 2_000
    static let defaultPageSize = 13
    static let maxPageSize = 100
    static let consultText = "이 게시물 보고 상담하러 왔어요"
    /// Stored events read per query while a stream catches up.
    static let catchUpBatch = 500

    // MARK: Rooms

    func openRoom(_ request: YediChat.OpenRoomRequest, context: ServerContext) async throws -> YediChat.OpenRoomResponse
    {
        let customerID = try context.requireRole(.customer).id
        let designerID = try Self.id(request.designerID, field: "designer_id")
        guard designerID != customerID else {
            throw RPCError(code: .invalidArgument, message: "designer_id: you cannot open a room with yourself")
        }
        let clientID = try Self.clientMessageID(request.clientMessageID)
        // The designer must exist and be a designer; without AccountService that cannot be known.
        let designer = try await ChatPeers.checking("AccountService") { try await peers.profiles([designerID]) }
        guard designer.contains(where: { $0.userID == designerID && $0.isDesigner }) else {
            throw RPCError(code: .notFound, message: "designer_id: no such designer")
        }
        var share: MessageDraft?
        if !request.postID.isEmpty {
            let postID = try Self.id(request.postID, field: "post_id")
            let preview = try await ChatPeers.checking("ContentService") { try await peers.posts([postID]) }.first
            guard let preview, preview.postID == postID else {
                throw RPCError(code: .notFound, message: "post_id: no such post")
            }
            guard preview.designerID == designerID else {
                throw RPCError(code: .invalidArgument, message: "post_id: the post is not this designer's")
            }
            share = MessageDraft(
                id: ids.next(), roomID: "", senderID: customerID, sentAtMilliseconds: clock.nowMilliseconds,
                clientMessageID: clientID ?? "consult-post:\(postID)",
                body: .postShare(
                    postID: postID, title: preview.title, firstPhoto: preview.firstPhoto, text: Self.consultText))
        } else if clientID != nil {
            throw RPCError(code: .invalidArgument, message: "client_message_id: only with post_id")
        }
        let opened: OpenedRoom
        do {
            opened = try await store.openRoom(
                kind: RoomRecord.consultKind, customerID: customerID, designerID: designerID, newRoomID: ids.next(),
                now: clock.nowMilliseconds, postShare: share, quota: quotas.roomsPerDay)
        } catch let exceeded as QuotaExceeded {
            throw exceeded.status
        }
        cache.remember(opened.room)
        if opened.postShare != nil { cache.invalidate(room: opened.room.id) }
        var room = ChatMessages.room(opened.room)
        if let profile = await directory.users([designerID], logger: context.logger)[designerID] {
            room.other = .init(userID: designerID, name: profile.name, profileImageID: profile.profileImageID)
        } else {
            room.other = .init(userID: designerID)
        }
        room.lastMessage = opened.postShare.map { ChatMessages.message($0, readByRecipient: false) }
        room.unreadCount = try await store.unreadCount(roomID: opened.room.id, userID: customerID) ?? 0
        return YediChat.OpenRoomResponse(
            room: room, created: opened.created,
            postShare: opened.postShare.map { ChatMessages.message($0, readByRecipient: false) })
    }

    func listRooms(_ request: YediChat.ListRoomsRequest, context: ServerContext) async throws
        -> YediChat.ListRoomsResponse
    {
        let userID = try context.requireUser().id
        let (after, limit) = try roomPages.read(request.page, as: Int64.self)
        let list = try await store.rooms(
            userID: userID, app: context.app, afterActivity: after?.key, limit: limit + 1)
        let shown = Array(list.rooms.prefix(limit))
        let names = await directory.users(shown.map { $0.room.other(than: userID) }, logger: context.logger)
        let rooms = shown.map { summary -> YediChat.Room in
            var room = ChatMessages.room(summary.room)
            let otherID = summary.room.other(than: userID)
            let profile = names[otherID]
            room.other = .init(
                userID: otherID, name: profile?.name ?? "", profileImageID: profile?.profileImageID ?? "")
            room.lastMessage = summary.lastMessage.map {
                let readBy = $0.senderID == userID ? summary.otherReadSeq : summary.myReadSeq
                return ChatMessages.message($0, readByRecipient: readBy >= $0.seq)
            }
            room.unreadCount = summary.unreadCount
            room.myReadSeq = summary.myReadSeq
            room.otherReadSeq = summary.otherReadSeq
            return room
        }
        return YediChat.ListRoomsResponse(
            rooms: rooms, page: roomPages.next(list.rooms.map { PagePosition(key: $0.activityPosition) }, limit: limit),
            totalUnread: list.totalUnread,
            streamPosition: list.headPosition)
    }

    // MARK: Messages

    func sendMessage(_ request: YediChat.SendMessageRequest, context: ServerContext) async throws
        -> YediChat.ChatMessage
    {
        let sender = try context.requireUser()
        let senderID = sender.id
        if sender.app == "slp" { try await openMatchRoomOnSend(request.roomID, sender: senderID) }
        let room = try await memberRoom(request.roomID, userID: senderID, app: context.app)
        let clientID = try Self.clientMessageID(request.clientMessageID)
        try Self.checkMatchRoom(room, body: request.body)
        let body: MessageBodyRecord
        switch request.body {
        case nil:
            throw RPCError(code: .invalidArgument, message: "body: send text, an image, a post share or a reservation")
        case .text(let text)?:
            body = .text(try Self.text(text.text, field: "text.text", required: true))
        case .image(let image)?:
            let imageID = try Self.id(image.image?.id ?? "", field: "image.image.id")
            let found = try await ChatPeers.checking("ContentService") { try await peers.images([imageID]) }
                .first { $0.image.id == imageID }
            guard let found else { throw RPCError(code: .notFound, message: "image.image.id: no such image") }
            guard found.ownerID == senderID else {
                throw RPCError(code: .permissionDenied, message: "image.image.id: not an image you uploaded")
            }
            body = .image(found.image)
        case .postShare(let share)?:
            let postID = try Self.id(share.postID, field: "post_share.post_id")
            let note = try Self.text(share.text, field: "post_share.text", required: false)
            let preview = try await ChatPeers.checking("ContentService") { try await peers.posts([postID]) }
                .first { $0.postID == postID }
            guard let preview else { throw RPCError(code: .notFound, message: "post_share.post_id: no such post") }
            body = .postShare(postID: postID, title: preview.title, firstPhoto: preview.firstPhoto, text: note)
        case .reservation(let reservation)?:
            let reservationID = try Self.id(reservation.reservationID, field: "reservation.reservation_id")
            let found = try await ChatPeers.checking("BookingService") { try await peers.reservation(reservationID) }
            guard let found else {
                throw RPCError(code: .notFound, message: "reservation.reservation_id: no such reservation")
            }
            guard found.customerID == room.customerID, found.designerID == room.designerID else {
                throw RPCError(
                    code: .permissionDenied,
                    message: "reservation.reservation_id: not a reservation of this room's pair")
            }
            body = .reservation(id: found.id, startAtMilliseconds: found.startAtMilliseconds)
        }
        // Match rooms: who has no stream open as the message is stored gets a push, queued with the message
        // (decided before: a stream that receives it live and closes at once is no reason to push).
        var offline: [String] = []
        if room.kind == RoomRecord.slpMatchKind {
            let others = room.members.filter { $0 != senderID }
            let listening = await presence.withOpenStreams(among: others)
            offline = others.filter { !listening.contains($0) }
        }
        let appended = try await mapStoreErrors(roomID: room.id) {
            try await store.appendMessage(
                MessageDraft(
                    id: ids.next(), roomID: room.id, senderID: senderID, sentAtMilliseconds: clock.nowMilliseconds,
                    clientMessageID: clientID, body: body, pushTo: offline))
        }
        if !appended.duplicate { cache.invalidate(room: room.id) }
        var readByRecipient = false
        if appended.duplicate {
            // A retry may come after the other member read it.
            let page = try await store.messages(roomID: room.id, afterSeq: appended.message.seq - 1, limit: 1)
            readByRecipient =
                page.readSeqs.contains { $0.key != senderID && $0.value >= appended.message.seq }
        }
        return ChatMessages.message(appended.message, readByRecipient: readByRecipient)
    }

    func listMessages(_ request: YediChat.ListMessagesRequest, context: ServerContext) async throws
        -> YediChat.ListMessagesResponse
    {
        let userID = try context.requireUser().id
        let room = try await memberRoom(request.roomID, userID: userID, app: context.app)
        let limit = try Self.limit(request.limit, default: Self.defaultPageSize)
        guard request.beforeSeq >= 0, request.afterSeq >= 0 else {
            throw RPCError(code: .invalidArgument, message: "before_seq and after_seq cannot be negative")
        }
        guard request.beforeSeq == 0 || request.afterSeq == 0 else {
            throw RPCError(code: .invalidArgument, message: "before_seq and after_seq: give one of them, not both")
        }
        let page: MessagePage
        if request.afterSeq > 0 {
            page = try await store.messages(roomID: room.id, afterSeq: request.afterSeq, limit: limit)
        } else {
            let key = HistoryCache.PageKey(beforeSeq: request.beforeSeq, limit: limit)
            if let cached = cache.page(room: room.id, key: key) {
                page = cached
            } else {
                let generation = cache.generation(of: room.id)
                page = try await store.messages(
                    roomID: room.id, beforeSeq: request.beforeSeq > 0 ? request.beforeSeq : nil, limit: limit)
                cache.store(page, room: room.id, key: key, generation: generation)
            }
        }
        let otherID = room.other(than: userID)
        let messages = await photos.refresh(page.messages, logger: context.logger)
        return YediChat.ListMessagesResponse(
            messages: messages.map { ChatMessages.message($0, readSeqs: page.readSeqs) },
            hasMore: page.hasMore, myReadSeq: page.readSeqs[userID] ?? 0, otherReadSeq: page.readSeqs[otherID] ?? 0)
    }

    func markRead(_ request: YediChat.MarkReadRequest, context: ServerContext) async throws
        -> YediChat.MarkReadResponse
    {
        let userID = try context.requireUser().id
        let room = try await memberRoom(request.roomID, userID: userID, app: context.app)
        guard request.upToSeq >= 0 else {
            throw RPCError(code: .invalidArgument, message: "up_to_seq cannot be negative")
        }
        let mark = try await mapStoreErrors(roomID: room.id) {
            try await store.markRead(
                roomID: room.id, userID: userID, upToSeq: request.upToSeq, now: clock.nowMilliseconds)
        }
        if mark.moved { cache.invalidate(room: room.id) }
        return YediChat.MarkReadResponse(
            readSeq: mark.readSeq, moved: mark.moved,
            unreadCount: try await store.unreadCount(roomID: room.id, userID: userID) ?? 0,
            totalUnread: try await store.totalUnread(userID: userID))
    }

    // MARK: Live stream

    func subscribe(
        _ request: YediChat.SubscribeRequest, writer: RPCWriter<YediChat.StreamEvent>, context: ServerContext
    ) async throws {
        let userID = try context.requireUser().id
        try await stream.run(
            key: userID, after: request.afterPosition,
            write: { try await writer.write(ChatMessages.event($0)) },
            caughtUp: { try await writer.write(.init(position: $0, event: .caughtUp(.init()))) })
    }

    /// The caller's stored events after their position, then live ones (the runtime's resume logic over
    /// this store's `chat_event` rows and the hub).
    var stream: ResumableStream<ChatEventRecord> {
        ResumableStream(
            hub: hub, log: ChatEventLog(store: store), batch: Self.catchUpBatch,
            restart: "reload with ListRooms and subscribe from its stream_position", liveFromLog: liveFromLog,
            reads: streamReads)
    }

    // MARK: Deletion

    func purgeUser(_ request: YediCommon.PurgeUserRequest, context: ServerContext) async throws
        -> YediCommon.PurgeUserResponse
    {
        guard !request.userID.isEmpty else {
            throw RPCError(code: .invalidArgument, message: "user_id is required")
        }
        let purged = try await store.purgeUser(
            userID: request.userID, delivery: Delivery(context), now: clock.nowMilliseconds)
        for room in purged.roomIDs { cache.invalidate(room: room, roomRemoved: true) }
        hub.end(key: request.userID, RPCError(code: .unauthenticated, message: "this account was deleted"))
        context.logPurge(
            of: request.userID, firstDelivery: purged.firstDelivery, removed: ["rooms": purged.roomIDs.count])
        return YediCommon.PurgeUserResponse()
    }

    // MARK: Helpers

    /// The room, if `userID` is a member. A stranger gets NOT_FOUND for a missing room and
    /// PERMISSION_DENIED for someone else's (room ids are unguessable, so this reveals nothing useful).
    /// The room `roomID` of `app` that `userID` is a member of: another app's room is as unknown as a
    /// missing one.
    private func memberRoom(_ roomID: String, userID: String, app: AppID) async throws -> RoomRecord {
        let roomID = try Self.id(roomID, field: "room_id")
        var room = cache.room(roomID)
        if room == nil {
            room = try await store.room(id: roomID)
            if let room { cache.remember(room) }
        }
        guard let room, room.app == app else { throw RPCError(code: .notFound, message: "room_id: no such room") }
        guard room.isMember(userID) else {
            throw RPCError(code: .permissionDenied, message: "room_id: you are not a member of this room")
        }
        return room
    }

    private func mapStoreErrors<T>(roomID: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch ChatStoreError.roomNotFound {
            throw RPCError(code: .notFound, message: "room_id: no such room")
        } catch ChatStoreError.notMember {
            throw RPCError(code: .permissionDenied, message: "room_id: you are not a member of this room")
        } catch ChatStoreError.roomClosed {
            throw RPCError(
                code: .failedPrecondition,
                message: "room_id: room \(roomID) is closed; its messages stay readable, nothing more can be sent")
        }
    }

    static func id(_ value: String, field: String) throws(RPCError) -> String { try FieldRule.id(value, field: field) }

    static func clientMessageID(_ value: String) throws(RPCError) -> String? {
        if value.isEmpty { return nil }
        guard value.count <= 64 else {
            throw RPCError(code: .invalidArgument, message: "client_message_id: at most 64 characters")
        }
        return value
    }

    /// Trimmed text: at most 2,000 characters (grapheme clusters, as a user counts them).
    static func text(_ value: String, field: String, required: Bool) throws(RPCError) -> String {
        try FieldRule.text(value, field: field, maxCharacters: maxTextCharacters, required: required)
    }

    static func limit(_ value: Int32, default defaultValue: Int) throws(RPCError) -> Int {
        guard value >= 0 else { throw RPCError(code: .invalidArgument, message: "limit cannot be negative") }
        return value == 0 ? defaultValue : min(Int(value), maxPageSize)
    }
}
