import Logging
import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// `yedi.content.ContentService`: the handlers. Access rules (who may call what) are in the proto and
/// enforced before these run; handlers check ownership and validate fields.
struct ContentHandlers: YediContent.ContentService.ServiceProtocol, HandlerKitUser {
    let store: any ContentStore
    let images: ImageLibrary
    /// What replies put in `ImageRef.url` and `thumbnail_url`.
    let urls: ImageURLs
    let peers: ContentPeers
    /// The clock, ids, quotas, lists, and the directory of post authors' names and profile images
    /// (AccountService's, cached; empty when it cannot answer).
    let kit: HandlerKit

    var pages: ContentPages { ContentPages(kit) }

    static let imageGone = RPCError(
        code: .notFound,
        message: "photo_ids: an image is gone (uploads nothing uses are removed after a grace period): upload it again")

    // MARK: Posts

    func createPost(_ request: YediContent.CreatePostRequest, context: ServerContext) async throws -> YediContent.Post {
        let designerID = try context.requireRole(.designer).id
        let now = clock.nowMilliseconds
        let post = PostRecord(
            id: ids.next(), app: context.app, designerID: designerID,
            title: try FieldRules.title(request.title),
            description: try FieldRules.description(request.description),
            priceKRW: try FieldRules.price(request.priceKRW), category: try FieldRules.category(request.category),
            photos: try await ownedImages(
                request.photoIDs, owner: designerID, field: "photo_ids", maximum: 10, context: context),
            likeCount: 0, createdAtMilliseconds: now, updatedAtMilliseconds: now)
        do {
            try await store.createPost(post, quota: quotas.postsPerDay)
        } catch let exceeded as QuotaExceeded {
            throw exceeded.status
        } catch ContentStoreError.imageGone {
            throw Self.imageGone
        }
        return try await messages([post], context: context)[0]
    }

    func updatePost(_ request: YediContent.UpdatePostRequest, context: ServerContext) async throws -> YediContent.Post {
        let designerID = try context.requireRole(.designer).id
        var post = try await ownPost(request.postID, designerID: designerID, context: context)
        post.title = try FieldRules.title(request.title)
        post.description = try FieldRules.description(request.description)
        post.priceKRW = try FieldRules.price(request.priceKRW)
        post.category = try FieldRules.category(request.category)
        post.photos = try await ownedImages(
            request.photoIDs, owner: designerID, field: "photo_ids", maximum: 10, context: context)
        post.updatedAtMilliseconds = clock.nowMilliseconds
        do {
            try await store.updatePost(post)
        } catch ContentStoreError.notFound {
            throw RPCError(code: .notFound, message: "post_id: no such post")
        } catch ContentStoreError.imageGone {
            throw Self.imageGone
        }
        guard let saved = try await store.post(id: post.id) else {
            throw RPCError(code: .notFound, message: "post_id: no such post")
        }
        return try await messages([saved], context: context)[0]
    }

    func deletePost(_ request: YediContent.DeletePostRequest, context: ServerContext) async throws
        -> YediContent.DeletePostResponse
    {
        let post = try await ownPost(
            request.postID, designerID: try context.requireRole(.designer).id, context: context)
        guard try await store.deletePost(id: post.id) else {
            throw RPCError(code: .notFound, message: "post_id: no such post")
        }
        return YediContent.DeletePostResponse()
    }

    func getPost(_ request: YediContent.GetPostRequest, context: ServerContext) async throws -> YediContent.Post {
        guard !request.postID.isEmpty else { throw FieldRules.invalid("post_id", "required") }
        guard let post = try await store.post(id: request.postID), Self.canSee(post, in: context, apps: apps)
        else {
            throw RPCError(code: .notFound, message: "post_id: no such post")
        }
        return try await messages([post], context: context)[0]
    }

    // MARK: Feeds

    func getFeed(_ request: YediContent.GetFeedRequest, context: ServerContext) async throws -> YediContent.FeedPage {
        var filter = PostFilter(
            app: context.app, designerIDs: nil,
            category: request.category == .unspecified ? nil : try FieldRules.category(request.category))
        switch request.scope {
        case .unspecified, .all:
            break
        case .following:
            guard let userID = context.caller.userID else {
                throw RPCError(code: .unauthenticated, message: "the following feed needs a sign-in")
            }
            do {
                filter.designerIDs = try await peers.followedDesignerIDs(userID)
            } catch {
                context.logger.warning("followed designers unavailable", metadata: ["error": "\(error)"])
                throw RPCError(code: .unavailable, message: "the following feed is unavailable; try again")
            }
        case .featured:
            filter.featuredOnly = true
        case .recommended:
            return try await recommendedFeed(request, category: filter.category, context)
        case .unrecognized:
            throw FieldRules.invalid("scope", "unknown feed scope")
        }
        let page = try pages.posts.read(request.page, as: Int64.self)
        let posts = try await store.posts(filter, after: page.after, limit: page.limit + 1)
        return try await feedPage(
            posts.map {
                (
                    $0,
                    ListPosition(
                        key: filter.featuredOnly ? $0.featuredAtMilliseconds ?? 0 : $0.createdAtMilliseconds, id: $0.id)
                )
            }, page.limit, list: pages.posts, context: context)
    }

    /// Posts ranked by their recent likes (`RecommendationPolicy`). The first page pins the ranking's
    /// snapshot (now); its cursor carries it, so later pages rank the same likes and no post shows twice.
    private func recommendedFeed(
        _ request: YediContent.GetFeedRequest, category: Int?, _ context: ServerContext
    ) async throws -> YediContent.FeedPage {
        let page = try pages.recommended.read(request.page, as: RecommendationKey.self)
        let snapshot = page.after?.key.snapshotAtMilliseconds ?? clock.nowMilliseconds
        let ranked = try await store.recommendedPosts(
            app: context.app, category: category, policy: .standard, snapshotAt: snapshot,
            after: page.after.map { PagePosition(key: $0.key.score, id: $0.id) }, limit: page.limit + 1)
        return try await feedPage(
            ranked.map {
                (
                    $0.post,
                    PagePosition(
                        key: RecommendationKey(snapshotAtMilliseconds: snapshot, score: $0.score), id: $0.post.id)
                )
            }, page.limit, list: pages.recommended, context: context)
    }

    /// Another app's post does not exist for the caller; a hidden post is for its designer and the app's
    /// operators only, and to anyone else it does not exist either.
    static func canSee(_ post: PostRecord, in context: ServerContext, apps: AppCatalog) -> Bool {
        guard post.app == context.app else { return false }
        guard post.hiddenAtMilliseconds != nil else { return true }
        guard let user = context.caller.user else { return false }
        return user.id == post.designerID || apps[user.app]?.operatorRoles.contains(user.role) == true
    }

    func listDesignerPosts(
        _ request: YediContent.ListDesignerPostsRequest, context: ServerContext
    ) async throws -> YediContent.FeedPage {
        guard !request.designerID.isEmpty else { throw FieldRules.invalid("designer_id", "required") }
        let page = try pages.posts.read(request.page, as: Int64.self)
        let posts = try await store.posts(
            PostFilter(app: context.app, designerIDs: [request.designerID], category: nil), after: page.after,
            limit: page.limit + 1)
        return try await feedPage(
            posts.map { ($0, ListPosition(key: $0.createdAtMilliseconds, id: $0.id)) }, page.limit,
            list: pages.posts, context: context)
    }

    // MARK: Likes

    func like(_ request: YediContent.LikeRequest, context: ServerContext) async throws -> YediContent.LikeResponse {
        let userID = try context.requireRole(.customer).id
        let postID = try FieldRules.required(request.postID, field: "post_id")
        do {
            let count = try await store.like(
                postID: postID, userID: userID, app: context.app, now: clock.nowMilliseconds)
            return YediContent.LikeResponse(liked: true, likeCount: count)
        } catch ContentStoreError.notFound {
            throw RPCError(code: .notFound, message: "post_id: no such post")
        }
    }

    func unlike(_ request: YediContent.LikeRequest, context: ServerContext) async throws -> YediContent.LikeResponse {
        let userID = try context.requireRole(.customer).id
        let postID = try FieldRules.required(request.postID, field: "post_id")
        do {
            let count = try await store.unlike(postID: postID, userID: userID, app: context.app)
            return YediContent.LikeResponse(liked: false, likeCount: count)
        } catch ContentStoreError.notFound {
            throw RPCError(code: .notFound, message: "post_id: no such post")
        }
    }

    func listLikedPosts(
        _ request: YediContent.ListLikedPostsRequest, context: ServerContext
    ) async throws -> YediContent.FeedPage {
        let userID = try context.requireRole(.customer).id
        let page = try pages.likes.read(request.page, as: Int64.self)
        let rows = try await store.likedPosts(
            userID: userID, app: context.app, after: page.after, limit: page.limit + 1)
        return try await feedPage(rows, page.limit, list: pages.likes, context: context)
    }

    // MARK: Helpers

    /// The post if `designerID` wrote it: NOT_FOUND if there is none, PERMISSION_DENIED if someone else did.
    private func ownPost(_ postID: String, designerID: String, context: ServerContext) async throws -> PostRecord {
        guard !postID.isEmpty else { throw FieldRules.invalid("post_id", "required") }
        guard let post = try await store.post(id: postID), post.app == context.app else {
            throw RPCError(code: .notFound, message: "post_id: no such post")
        }
        guard post.designerID == designerID else {
            throw RPCError(code: .permissionDenied, message: "post_id: only its author may change this post")
        }
        return post
    }

    /// `ids` as images the caller uploaded, in order: 1 to `maximum`, no repeats, each existing (NOT_FOUND)
    /// and uploaded by `owner` (PERMISSION_DENIED).
    func ownedImages(
        _ ids: [String], owner: String, field: String, maximum: Int, context: ServerContext
    ) async throws -> [ImageRecord] {
        guard !ids.isEmpty else { throw FieldRules.invalid(field, "at least one image") }
        guard ids.count <= maximum else { throw FieldRules.invalid(field, "at most \(maximum) images") }
        guard Set(ids).count == ids.count else { throw FieldRules.invalid(field, "an image is listed twice") }
        let found = Dictionary(
            try await store.images(ids: ids).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return try ids.map { id throws(RPCError) -> ImageRecord in
            // Another app's image does not exist for this caller (owners are users of one app).
            guard let image = found[id], image.app == context.app else {
                throw RPCError(code: .notFound, message: "\(field): no image \"\(id)\"; upload it first")
            }
            guard image.ownerID == owner else {
                throw RPCError(code: .permissionDenied, message: "\(field): image \"\(id)\" is not yours")
            }
            return image
        }
    }

    /// A page of posts read with one extra row: the messages (one author lookup, one liked lookup) and the
    /// cursor after the last one shown.
    private func feedPage<Key: PageKey>(
        _ rows: [(PostRecord, PagePosition<Key>)], _ limit: Int, list: PageList, context: ServerContext
    ) async throws -> YediContent.FeedPage {
        let shown = Array(rows.prefix(limit))
        return YediContent.FeedPage(
            posts: try await messages(shown.map(\.0), context: context),
            page: list.next(rows.map(\.1), limit: limit))
    }

    /// Posts as clients see them: authors from AccountService (one batched lookup), and whether the caller
    /// likes each.
    func messages(_ posts: [PostRecord], context: ServerContext) async throws -> [YediContent.Post] {
        guard !posts.isEmpty else { return [] }
        let authors = await directory.users(posts.map(\.designerID), logger: context.logger)
        var liked: Set<String> = []
        if let userID = context.caller.userID {
            liked = try await store.likedPostIDs(userID: userID, among: posts.map(\.id))
        }
        return posts.map { post in
            let author = authors[post.designerID].map {
                YediContent.PostAuthor(
                    name: $0.name, profileImageID: $0.profileImageID, shopName: $0.shopName, shopArea: $0.shopArea)
            }
            return self.post(post, author: author, liked: liked.contains(post.id))
        }
    }
}
