import AccessTokens
import Foundation
import Logging
import RPCCore
import ServiceRuntime
import YediCrypto
import YediProto

/// `yedi.account.AccountService`: the handlers. Access rules (who may call what) are in the proto and
/// enforced before these run; handlers check ownership and validate fields.
struct AccountHandlers: YediAccount.AccountService.ServiceProtocol, HandlerKitUser {
    let store: any AccountStore
    let credentials: Credentials
    let mailer: CodeMailer
    /// Accounts without a password: phone codes and provider tokens (`IdentityHandlers`).
    let identity: IdentitySignIn
    /// Rating and review count come from ContentService, the owner of reviews.
    let reviews: @Sendable ([String]) async throws -> [String: YediAccount.ReviewSummary]
    let kit: HandlerKit
    /// Removes the development files (sent mail, SMS and push) addressed to a deleted account's e-mail,
    /// numbers and devices, or naming its id in their values (pushes to others about it); nothing when a
    /// real provider sends them (it keeps its own logs).
    var forgetSentMessages: @Sendable (_ recipients: Set<String>, _ mentioning: Set<String>) -> Void = { _, _ in }

    var pages: AccountPages { AccountPages(kit) }

    /// `yedi.account.Identity`, served beside these on the same store and credentials.
    var identityHandlers: IdentityHandlers { IdentityHandlers(account: self) }

    static let recentSearchesKept = 20

    // MARK: Profiles

    func getMe(_ request: YediAccount.GetMeRequest, context: ServerContext) async throws -> YediAccount.User {
        Self.user(try await currentUser(context))
    }

    func getUser(_ request: YediAccount.GetUserRequest, context: ServerContext) async throws -> YediAccount.PublicUser {
        guard let user = try await store.user(id: request.userID) else {
            throw RPCError(code: .notFound, message: "no such user")
        }
        return Self.publicUser(user)
    }

    func batchGetUsers(
        _ request: YediAccount.BatchGetUsersRequest, context: ServerContext
    ) async throws -> YediAccount.BatchGetUsersResponse {
        guard request.userIDs.count <= 100 else { throw FieldRules.invalid("user_ids", "at most 100 ids") }
        let users = try await Self.publicUsers(Array(Set(request.userIDs)), store: store)
        let byID = Dictionary(users.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var seen = Set<String>()
        let ordered = request.userIDs.compactMap { id -> YediAccount.PublicUser? in
            guard seen.insert(id).inserted else { return nil }
            return byID[id]
        }
        return YediAccount.BatchGetUsersResponse(users: ordered)
    }

    func getDesigner(_ request: YediAccount.GetDesignerRequest, context: ServerContext) async throws
        -> YediAccount.Designer
    {
        guard let (user, designer) = try await store.designer(id: request.designerID) else {
            throw RPCError(code: .notFound, message: "no such designer")
        }
        return await designerProfile(user, designer, logger: context.logger)
    }

    func updateProfile(_ request: YediAccount.UpdateProfileRequest, context: ServerContext) async throws
        -> YediAccount.User
    {
        var user = try await currentUser(context)
        guard !request.fields.isEmpty else { throw FieldRules.invalid("fields", "name the fields to change") }
        for field in Set(request.fields) {
            switch field {
            case "name": user.name = try FieldRule.name(request.name, field: "name")
            case "phone": user.phone = try FieldRule.mobilePhone(request.phone)
            case "gender": user.gender = try FieldRules.gender(request.gender)
            case "birth_date": user.birthDate = try FieldRules.birthDate(request.birthDate, today: clock.now)
            case "profile_image_id":
                user.profileImageID = try FieldRule.imageID(request.profileImageID, field: "profile_image_id")
            case "favourite_style":
                user.favouriteStyle = try FieldRules.text(request.favouriteStyle, field: "favourite_style", maximum: 50)
            default: throw FieldRules.invalid("fields", "\"\(field)\" cannot be changed here")
            }
        }
        try await store.updateUser(user)
        return Self.user(user)
    }

    func updateDesignerProfile(
        _ request: YediAccount.UpdateDesignerProfileRequest, context: ServerContext
    ) async throws -> YediAccount.Designer {
        var (user, designer) = try await currentDesigner(context)
        designer.description = try FieldRules.text(request.description, field: "description", maximum: 1_000)
        designer.skills = try FieldRules.skills(request.skills, field: "skills")
        designer.rank = try FieldRules.rank(request.rank, field: "rank")
        try await store.updateDesigner(designer)
        return await designerProfile(user, designer, logger: context.logger)
    }

    func updateShop(_ request: YediAccount.UpdateShopRequest, context: ServerContext) async throws
        -> YediAccount.Designer
    {
        var (user, designer) = try await currentDesigner(context)
        designer.shop = try FieldRules.shop(request.shop)
        try await store.updateDesigner(designer)
        return await designerProfile(user, designer, logger: context.logger)
    }

    // MARK: Search and recent searches

    func searchDesigners(
        _ request: YediAccount.SearchDesignersRequest, context: ServerContext
    ) async throws -> YediAccount.SearchDesignersResponse {
        let query = request.query.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !query.isEmpty else { throw FieldRules.invalid("query", "required") }
        guard query.count <= 50 else { throw FieldRules.invalid("query", "at most 50 characters") }
        let page = try pages.designerSearch.read(request.page, as: String.self)
        let hits = try await store.searchDesigners(query: query, after: page.after, limit: page.limit + 1)
        return YediAccount.SearchDesignersResponse(
            designers: hits.prefix(page.limit).map { Self.summary($0.0) },
            page: pages.designerSearch.next(hits.map(\.1), limit: page.limit))
    }

    func listRecentSearches(
        _ request: YediAccount.ListRecentSearchesRequest, context: ServerContext
    ) async throws -> YediAccount.ListRecentSearchesResponse {
        Self.recentSearches(try await store.recentSearches(userID: try context.requireUser().id))
    }

    func recordRecentSearch(
        _ request: YediAccount.RecordRecentSearchRequest, context: ServerContext
    ) async throws -> YediAccount.ListRecentSearchesResponse {
        let userID = try context.requireUser().id
        let kind: RecentSearchKind
        let value: String
        switch request.entry {
        case .query(let text)?:
            kind = .query
            value = try FieldRule.name(text, field: "query")
        case .designerID(let id)?:
            guard try await store.designer(id: id) != nil else {
                throw RPCError(code: .notFound, message: "designer_id: no such designer")
            }
            kind = .designer
            value = id
        case nil:
            throw FieldRules.invalid("entry", "give a query or a designer_id")
        }
        return Self.recentSearches(
            try await store.recordRecentSearch(
                userID: userID, kind: kind, value: value, id: ids.next(), now: clock.nowMilliseconds,
                keep: Self.recentSearchesKept))
    }

    func deleteRecentSearch(
        _ request: YediAccount.DeleteRecentSearchRequest, context: ServerContext
    ) async throws -> YediAccount.ListRecentSearchesResponse {
        Self.recentSearches(
            try await store.deleteRecentSearches(
                userID: try context.requireUser().id, id: request.id.isEmpty ? nil : request.id))
    }

    // MARK: Follows

    func follow(_ request: YediAccount.FollowRequest, context: ServerContext) async throws -> YediAccount.FollowResponse
    {
        let count = try await followChange(request, context) { customer, designer in
            try await store.follow(customerID: customer, designerID: designer, now: clock.nowMilliseconds)
        }
        return YediAccount.FollowResponse(following: true, followerCount: count)
    }

    func unfollow(_ request: YediAccount.FollowRequest, context: ServerContext) async throws
        -> YediAccount.FollowResponse
    {
        let count = try await followChange(request, context) { customer, designer in
            try await store.unfollow(customerID: customer, designerID: designer)
        }
        return YediAccount.FollowResponse(following: false, followerCount: count)
    }

    private func followChange(
        _ request: YediAccount.FollowRequest,
        _ context: ServerContext,
        _ change: (String, String) async throws -> Int64
    ) async throws -> Int64 {
        let customer = try context.requireRole(.customer).id
        guard !request.designerID.isEmpty else { throw FieldRules.invalid("designer_id", "required") }
        guard request.designerID != customer else {
            throw RPCError(code: .invalidArgument, message: "designer_id: you cannot follow yourself")
        }
        do {
            return try await change(customer, request.designerID)
        } catch AccountStoreError.notFound {
            throw RPCError(code: .notFound, message: "designer_id: no such designer")
        }
    }

    func listFollowing(
        _ request: YediAccount.ListFollowingRequest, context: ServerContext
    ) async throws -> YediAccount.ListFollowingResponse {
        let page = try pages.following.read(request.page, as: String.self)
        let rows = try await store.following(
            customerID: try context.requireUser().id, after: page.after, limit: page.limit + 1)
        return YediAccount.ListFollowingResponse(
            designers: rows.prefix(page.limit).map { Self.summary($0.0) },
            page: pages.following.next(rows.map(\.1), limit: page.limit))
    }

    func listFollowedDesignerIDs(
        _ request: YediAccount.ListFollowedDesignerIdsRequest, context: ServerContext
    ) async throws -> YediAccount.ListFollowedDesignerIdsResponse {
        guard !request.userID.isEmpty else { throw FieldRules.invalid("user_id", "required") }
        try context.requireActing(forOneOf: [request.userID], field: "user_id")
        return YediAccount.ListFollowedDesignerIdsResponse(
            designerIDs: try await store.followedDesignerIDs(userID: request.userID))
    }

    /// The shop fields BookingService builds a designer's default schedule from. The store keeps them
    /// resolved (defaults applied at sign-up), so this only copies them.
    func getShopHours(_ request: YediAccount.GetShopHoursRequest, context: ServerContext) async throws
        -> YediAccount.ShopHours
    {
        guard !request.designerID.isEmpty else { throw FieldRules.invalid("designer_id", "required") }
        guard let (_, designer) = try await store.designer(id: request.designerID) else {
            throw RPCError(code: .notFound, message: "no such designer")
        }
        return YediAccount.ShopHours(
            designerID: request.designerID, openingHour: Int32(designer.shop.openingHour),
            closingHour: Int32(designer.shop.closingHour), timeZone: designer.shop.timeZone)
    }

    // MARK: Helpers

    /// The caller's account; a token that outlived its account is refused.
    func currentUser(_ context: ServerContext) async throws -> UserRecord {
        guard let user = try await store.user(id: try context.requireUser().id) else {
            throw RPCError(code: .unauthenticated, message: "this account no longer exists")
        }
        return user
    }

    private func currentDesigner(_ context: ServerContext) async throws -> (UserRecord, DesignerRecord) {
        guard let found = try await store.designer(id: try context.requireRole(.designer).id) else {
            throw RPCError(code: .unauthenticated, message: "this account no longer exists")
        }
        return found
    }

    /// The public profile, with the review summary from ContentService when it answers in time.
    private func designerProfile(_ user: UserRecord, _ designer: DesignerRecord, logger: Logger) async
        -> YediAccount.Designer
    {
        var profile = Self.designer(user, designer)
        do {
            profile.reviews = try await reviews([user.id])[user.id]
        } catch {
            logger.warning("designer profile without its review summary", metadata: ["error": "\(error)"])
        }
        return profile
    }
}
