import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// Open houses, curated by admins, and the home screen's picks.
extension CommunityHandlers {
    func createHouse(_ request: YediHousetainer.CreateHouseRequest, context: ServerContext) async throws
        -> YediHousetainer.House
    {
        let admin = try adminReader(context)
        let clientID = try FieldRule.id(request.clientID, field: "client_id")
        let fields = try CommunityFields.house(request.fields ?? .init())
        try await ownImages(
            fields.imageIDs, reader: admin, maximum: CommunityFields.maxHouseImages, context: context)
        try await requireMember(fields.ownerID, field: "owner_id")
        let now = clock.nowMilliseconds
        let house = try await store.createHouse(
            HouseRecord(
                id: ids.next(), app: admin.app, ownerID: fields.ownerID, creatorID: admin.id, clientID: clientID,
                fields: fields, createdAtMilliseconds: now, updatedAtMilliseconds: now))
        return try await messages([house]).first ?? .init()
    }

    func updateHouse(_ request: YediHousetainer.UpdateHouseRequest, context: ServerContext) async throws
        -> YediHousetainer.House
    {
        let admin = try adminReader(context)
        let id = try FieldRule.id(request.houseID, field: "house_id")
        let fields = try CommunityFields.house(request.fields ?? .init())
        try await ownImages(
            fields.imageIDs, reader: admin, maximum: CommunityFields.maxHouseImages, context: context)
        try await requireMember(fields.ownerID, field: "owner_id")
        try await mapped("house_id") {
            try await store.updateHouse(id: id, fields, app: admin.app, now: clock.nowMilliseconds)
        }
        return try await house(id, reader: admin)
    }

    func setHouseDisplay(_ request: YediHousetainer.SetHouseDisplayRequest, context: ServerContext) async throws
        -> YediHousetainer.House
    {
        let admin = try adminReader(context)
        let id = try FieldRule.id(request.houseID, field: "house_id")
        try await mapped("house_id") {
            try await store.setHouseDisplay(
                houseID: id, displayed: request.displayed, app: admin.app, now: clock.nowMilliseconds)
        }
        return try await house(id, reader: admin)
    }

    func getHouse(_ request: YediHousetainer.HouseRequest, context: ServerContext) async throws
        -> YediHousetainer.House
    {
        try await house(try FieldRule.id(request.houseID, field: "house_id"), reader: try reader(context))
    }

    func listHouses(_ request: YediHousetainer.ListHousesRequest, context: ServerContext) async throws
        -> YediHousetainer.ListHousesResponse
    {
        let reader = try self.reader(context)
        let category =
            request.category == .unspecified
            ? nil
            : Int(
                try FieldRule.choice(
                    request.category, field: "category", allowed: [.artist, .creator, .spaceDesigner, .collector],
                    names: "artist, creator, space designer or collector"
                ).rawValue)
        return try await housePage(category: category, ownerID: nil, page: request.page, reader: reader)
    }

    func listMemberHouses(_ request: YediHousetainer.ListMemberHousesRequest, context: ServerContext) async throws
        -> YediHousetainer.ListHousesResponse
    {
        let reader = try self.reader(context)
        let member = try FieldRule.id(request.memberID, field: "member_id")
        return try await housePage(category: nil, ownerID: member, page: request.page, reader: reader)
    }

    func getHome(_ request: YediHousetainer.GetHomeRequest, context: ServerContext) async throws
        -> YediHousetainer.Home
    {
        try await home(try reader(context))
    }

    func setPicks(_ request: YediHousetainer.SetPicksRequest, context: ServerContext) async throws
        -> YediHousetainer.Home
    {
        let admin = try adminReader(context)
        let moments = try CommunityFields.picks(request.momentEventIDs, field: "moment_event_ids", maximum: 6)
        let events = try CommunityFields.picks(request.eventIDs, field: "event_ids", maximum: 4)
        let houses = try CommunityFields.picks(request.houseIDs, field: "house_ids", maximum: 4)
        try await mapped("picks") {
            try await store.setPicks(moments: moments, events: events, houses: houses, app: admin.app)
        }
        return try await home(admin)
    }

    // MARK: Helpers

    /// The caller, who must be one of the app's admins (its operator roles).
    private func adminReader(_ context: ServerContext) throws(RPCError) -> CommunityReader {
        let admin = try context.requireOperator(of: apps)
        return CommunityReader(id: admin.id, app: admin.app, isAdmin: true)
    }

    private func home(_ reader: CommunityReader) async throws -> YediHousetainer.Home {
        let home = try await store.home(reader: reader)
        return YediHousetainer.Home(
            moments: try await messages(home.moments), eventPicks: try await messages(home.events),
            housePicks: try await messages(home.houses))
    }

    private func housePage(
        category: Int?, ownerID: String?, page: YediCommon.PageRequest?, reader: CommunityReader
    ) async throws -> YediHousetainer.ListHousesResponse {
        let list = kit.pageList("housetainer-houses", defaultLimit: 10)
        let (after, limit) = try list.read(page, as: Int64.self)
        let houses = try await store.houses(
            category: category, ownerID: ownerID, reader: reader, after: after, limit: limit + 1)
        return YediHousetainer.ListHousesResponse(
            houses: try await messages(Array(houses.prefix(limit))),
            page: list.next(houses.map { PagePosition(key: $0.createdAtMilliseconds, id: $0.id) }, limit: limit))
    }
}
