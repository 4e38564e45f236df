import RPCAccess
import RPCCore
import YediProto

/// Store records → the messages clients receive.
extension AccountHandlers {
    static func role(_ role: UserRole) -> YediAccount.Role {
        switch role {
        case .customer: .customer
        case .designer: .designer
        default: .unspecified
        }
    }

    static func user(_ user: UserRecord) -> YediAccount.User {
        YediAccount.User(
            id: user.id, role: role(user.role), name: user.name, email: user.email, phone: user.phone,
            gender: YediAccount.Gender(rawValue: Int32(user.gender)),
            birthDate: user.birthDate.map {
                YediCommon.LocalDate(year: Int32($0.year), month: Int32($0.month), day: Int32($0.day))
            },
            profileImageID: user.profileImageID, favouriteStyle: user.favouriteStyle,
            createdAtMs: user.createdAtMilliseconds)
    }

    static func publicUser(_ user: UserRecord, shop: ShopCardRecord? = nil, memberType: String = "")
        -> YediAccount.PublicUser
    {
        YediAccount.PublicUser(
            id: user.id, role: role(user.role), name: user.name, profileImageID: user.profileImageID,
            shopName: shop?.name ?? "", shopArea: shop?.area ?? "", memberType: memberType)
    }

    /// The public users among `ids` (designers with their shop cards), in no particular order: what
    /// BatchGetUsers answers and the directories of every service cache.
    static func publicUsers(_ ids: [String], store: any AccountStore) async throws -> [YediAccount.PublicUser] {
        let users = try await store.users(ids: ids)
        let shops = try await store.shopCards(designerIDs: users.filter { $0.role == .designer }.map(\.id))
        let types = try await store.memberTypes(userIDs: users.filter { $0.app == HousetainerRules.app }.map(\.id))
        return users.map { publicUser($0, shop: shops[$0.id], memberType: types[$0.id] ?? "") }
    }

    static func designer(_ user: UserRecord, _ designer: DesignerRecord) -> YediAccount.Designer {
        let shop = designer.shop
        return YediAccount.Designer(
            user: publicUser(user), description: designer.description, skills: designer.skills,
            rank: YediAccount.DesignerRank(rawValue: Int32(designer.rank)), reviews: nil,
            followerCount: designer.followerCount,
            shop: YediAccount.Shop(
                name: shop.name, phone: shop.phone,
                address: YediAccount.Address(city: shop.city, district: shop.district, detail: shop.detail),
                latitude: shop.latitude, longitude: shop.longitude, openingHour: Int32(shop.openingHour),
                closingHour: Int32(shop.closingHour),
                messengerLinks: shop.messengerLinks.map { YediAccount.MessengerLink(kind: $0.kind, url: $0.url) },
                timeZone: shop.timeZone))
    }

    static func summary(_ record: DesignerSummaryRecord) -> YediAccount.DesignerSummary {
        YediAccount.DesignerSummary(
            user: publicUser(record.user), rank: YediAccount.DesignerRank(rawValue: Int32(record.rank)),
            shopName: record.shopName, district: record.district, followerCount: record.followerCount)
    }

    static func recentSearches(_ records: [RecentSearchRecord]) -> YediAccount.ListRecentSearchesResponse {
        YediAccount.ListRecentSearchesResponse(
            searches: records.map { record in
                YediAccount.RecentSearch(
                    id: record.id,
                    entry: record.kind == .query ? .query(record.value) : .designerID(record.value),
                    searchedAtMs: record.searchedAtMilliseconds)
            })
    }
}
