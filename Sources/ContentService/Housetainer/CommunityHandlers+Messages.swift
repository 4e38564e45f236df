import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// Who reads, the images an event takes, records → messages, refusals → statuses.
extension CommunityHandlers {
    /// The signed-in caller; admins (the app's operator roles) see every event.
    func reader(_ context: ServerContext) throws(RPCError) -> CommunityReader {
        let user = try context.requireUser()
        return CommunityReader(
            id: user.id, app: user.app, isAdmin: apps[user.app]?.operatorRoles.contains(user.role) == true)
    }

    /// 1 to `maximum` of the caller's own images of this app (`NOT_FOUND` unknown, `PERMISSION_DENIED`
    /// another's). Not pinned: the event's or house's image rows keep them from unreferenced-image
    /// collection while it shows them, and no longer once it is deleted or shows others.
    func ownImages(
        _ ids: [String], reader: CommunityReader, maximum: Int = CommunityFields.maxImages, context: ServerContext
    ) async throws {
        _ = try await content.ownedImages(
            ids, owner: reader.id, field: "image_ids", maximum: maximum, context: context)
    }

    /// A member id that is not the caller's (`INVALID_ARGUMENT` for oneself).
    func other(_ value: String, reader: CommunityReader) throws(RPCError) -> String {
        let id = try FieldRule.id(value, field: "member_id")
        guard id != reader.id else { throw FieldRule.invalid("member_id", "not yourself") }
        return id
    }

    /// Refuses an id that is no Housetainer member (`NOT_FOUND` naming `field`): AccountService's
    /// `BatchGetUsers`, the directory's own lookup, asked each time rather than through the directory's
    /// cache, which keeps "unknown" for a minute (a member who just joined would be refused) and cannot
    /// tell unknown from unreachable. A member is an account with a member type (H, h or a), which only
    /// Housetainer's have. `UNAVAILABLE` when AccountService cannot answer.
    func requireMember(_ id: String, field: String) async throws {
        let users: [YediAccount.PublicUser]
        do {
            users = try await content.peers.users([id])
        } catch {
            throw RPCError(code: .unavailable, message: "\(field): members cannot be checked now; try again")
        }
        guard users.contains(where: { $0.id == id && !$0.memberType.isEmpty }) else {
            throw RPCError(code: .notFound, message: "\(field): no such member")
        }
    }

    func event(_ id: String, reader: CommunityReader) async throws -> YediHousetainer.Event {
        guard let event = try await store.event(id: id, reader: reader) else {
            throw Self.refusal(.notFound, field: "event_id")
        }
        return try await messages([event]).first ?? .init()
    }

    func response(_ page: EventPage, limit: Int, list: PageList) async throws -> YediHousetainer.ListEventsResponse {
        YediHousetainer.ListEventsResponse(
            events: try await messages(Array(page.events.prefix(limit))),
            page: list.next(zip(page.keys, page.events).map { PagePosition(key: $0, id: $1.id) }, limit: limit))
    }

    /// The events with their images' signed URLs (the large variant, never the original), one image read.
    func messages(_ events: [EventRecord]) async throws -> [YediHousetainer.Event] {
        let images = Dictionary(
            try await content.store.images(ids: Array(Set(events.flatMap(\.imageIDs)))).map { ($0.id, $0) },
            uniquingKeysWith: { first, _ in first })
        let owners = await authors.authors(events.map(\.ownerID))
        return events.map { event in
            YediHousetainer.Event(
                id: event.id, ownerID: event.ownerID, title: event.title,
                scheduleType: YediHousetainer.ScheduleType(rawValue: Int32(event.scheduleType)),
                atMs: event.atMilliseconds, detail: event.detail, link: event.link,
                images: event.imageIDs.compactMap { images[$0] }.map { content.imageRef($0, .signed) },
                displayed: event.displayed, bookmarked: event.bookmarked,
                createdAtMs: event.createdAtMilliseconds, updatedAtMs: event.updatedAtMilliseconds,
                commentCount: Int32(event.commentCount), owner: owners[event.ownerID])
        }
    }

    static func message(_ comment: CommentRecord, writer: YediHousetainer.Author?) -> YediHousetainer.Comment {
        let (eventID, houseID) = SQLiteCommunityStore.columns(comment.target)
        return YediHousetainer.Comment(
            id: comment.id, writerID: comment.writerID, eventID: eventID ?? "", content: comment.content,
            createdAtMs: comment.createdAtMilliseconds, houseID: houseID ?? "", writer: writer)
    }

    /// The houses with their images' signed URLs (the large variant), one image read.
    func messages(_ houses: [HouseRecord]) async throws -> [YediHousetainer.House] {
        let images = Dictionary(
            try await content.store.images(ids: Array(Set(houses.flatMap(\.fields.imageIDs)))).map { ($0.id, $0) },
            uniquingKeysWith: { first, _ in first })
        let owners = await authors.authors(houses.map(\.ownerID))
        return houses.map { house in
            YediHousetainer.House(
                id: house.id, ownerID: house.ownerID, name: house.fields.name, title: house.fields.title,
                content: house.fields.content,
                category: YediHousetainer.HouseCategory(rawValue: Int32(house.fields.category)),
                images: house.fields.imageIDs.compactMap { images[$0] }.map { content.imageRef($0, .signed) },
                coverIndex: Int32(house.fields.coverIndex), domestic: house.fields.domestic,
                location: house.fields.location, detailedLocation: house.fields.detailedLocation,
                displayed: house.displayed, commentCount: Int32(house.commentCount),
                createdAtMs: house.createdAtMilliseconds, updatedAtMs: house.updatedAtMilliseconds,
                owner: owners[house.ownerID])
        }
    }

    func house(_ id: String, reader: CommunityReader) async throws -> YediHousetainer.House {
        guard let house = try await store.house(id: id, reader: reader) else {
            throw Self.refusal(.notFound, field: "house_id")
        }
        return try await messages([house]).first ?? .init()
    }

    /// Runs a store call about `field`, turning `CommunityStoreError` into the status the app sees.
    func mapped<T: Sendable>(_ field: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as CommunityStoreError {
            throw Self.refusal(error, field: field)
        }
    }

    static func refusal(_ error: CommunityStoreError, field: String) -> RPCError {
        switch error {
        case .notFound: RPCError(code: .notFound, message: "\(field): not found")
        case .notOwner: RPCError(code: .permissionDenied, message: "\(field): not yours")
        }
    }
}
