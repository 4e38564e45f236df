import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// Where ContentService keeps its rows. Handlers see only this protocol (the SQLite implementation is
/// `SQLiteContentStore`), so a second engine can replace it and the same contract tests run against both.
///
/// Every method is one transaction.
protocol ContentStore: Sendable {
    // MARK: Images

    /// Adds the image row unless its owner is at one of `quotas` (counted in the same transaction): then
    /// throws `QuotaExceeded` and lists the blob for `collectUnreferencedBlobs`.
    func insertImage(_ image: ImageRecord, quotas: UploadQuotas?) async throws
    /// The images among `ids` that exist, in no particular order.
    func images(ids: [String]) async throws -> [ImageRecord]

    // MARK: Posts

    /// Adds the post with its photos (`post.photos` in order; only their ids are used). `QuotaExceeded`
    /// when the designer's posts created this Seoul day reach `quota` (counted in the transaction).
    func createPost(_ post: PostRecord, quota: Quota?) async throws
    /// Replaces title, description, price, category, photos and the update time; keeps likes and the
    /// creation time. `ContentStoreError.notFound` if the post does not exist.
    func updatePost(_ post: PostRecord) async throws
    /// Deletes the post, its photo list and its likes; false if there was no such post.
    func deletePost(id: String) async throws -> Bool
    func post(id: String) async throws -> PostRecord?
    /// The posts among `ids` that exist, in no particular order.
    func posts(ids: [String]) async throws -> [PostRecord]
    /// Newest first by (creation time, id), strictly after `position`; of `filter.app` only.
    func posts(_ filter: PostFilter, after position: ListPosition?, limit: Int) async throws -> [PostRecord]
    /// Posts liked within `policy`'s window before `snapshotAt` (likes after it do not count), best score
    /// first, then larger id; strictly after `position` (score, id). Hidden posts are left out.
    func recommendedPosts(
        app: AppID, category: Int?, policy: RecommendationPolicy, snapshotAt: Int64,
        after position: PagePosition<Int64>?,
        limit: Int
    ) async throws -> [(post: PostRecord, score: Int64)]

    // MARK: Likes

    /// Idempotent; returns the post's like count. `ContentStoreError.notFound` if `app` has no such post
    /// (the like carries the app).
    func like(postID: String, userID: String, app: AppID, now: Int64) async throws -> Int64
    /// Idempotent; returns the post's like count. `ContentStoreError.notFound` if `app` has no such post.
    func unlike(postID: String, userID: String, app: AppID) async throws -> Int64
    /// Which of `postIDs` the user likes.
    func likedPostIDs(userID: String, among postIDs: [String]) async throws -> Set<String>
    /// The user's liked posts, newest like first, after `position` (the like time and post id).
    func likedPosts(userID: String, app: AppID, after position: ListPosition?, limit: Int) async throws -> [(
        PostRecord, ListPosition
    )]

    // MARK: Reviews

    /// Adds the review and updates the designer's summary in the same transaction.
    /// `ContentStoreError.alreadyReviewed` if the reservation has a review; `QuotaExceeded` when the
    /// customer's reviews this Seoul day reach `quota` (counted in the transaction).
    func createReview(_ review: ReviewRecord, quota: Quota?) async throws
    /// Newest first by (creation time, id).
    /// Newest first by (creation time, id), of `app` only.
    func reviews(designerID: String, app: AppID, after position: ListPosition?, limit: Int) async throws
        -> [ReviewRecord]
    func reviews(customerID: String, app: AppID, after position: ListPosition?, limit: Int) async throws
        -> [ReviewRecord]
    /// One per id asked for, in that order (an empty summary for a designer without reviews).
    func reviewSummaries(designerIDs: [String]) async throws -> [ReviewSummaryRecord]

    // MARK: Moderation

    /// Applies an operator's `change` to the post or review of `change.app` and, when it changed
    /// something, queues `log` for the app's operator log (AccountService) in the same transaction; hiding
    /// or showing a review recomputes its designer's summary. Answers whether anything changed;
    /// `ContentStoreError.notFound` when the app has no such content.
    func moderate(_ change: ContentModerationChange, log: YediModeration.RecordOperatorActionRequest) async throws
        -> Bool

    // MARK: Account deletion

    /// Removes what the user authored or liked (posts with their likes, likes with the counts they
    /// changed, reviews written by or about them with the summaries recomputed, their images) and records
    /// the blobs no image refers to any more for `collectUnreferencedBlobs`. `delivery` (the PurgeUser
    /// call) goes to the receipt ledger. Idempotent.
    func purgeUser(_ userID: String, delivery: Delivery?, now: Int64) async throws -> PurgeOutcome
    /// Calls `delete` for each recorded blob that still no image refers to, then forgets it; returns how
    /// many were deleted. Runs in one write transaction, so no upload can claim a blob meanwhile.
    func collectUnreferencedBlobs(_ delete: @escaping @Sendable (String) throws -> Void) async throws -> Int

    // MARK: Unreferenced images

    /// Marks the images as used outside this service (ChatService's image messages, which it learns of
    /// through `GetImageRefs`), so that collection keeps them.
    func pinImages(ids: [String], now: Int64) async throws
    /// Images created before `createdBefore` that no post or review uses and nothing pinned, oldest first
    /// by (creation time, id), strictly after `after`.
    func unreferencedImages(createdBefore: Int64, after: ImageRecord?, limit: Int) async throws -> [ImageRecord]
    /// Deletes those of `ids` that are still unreferenced and created before `createdBefore` (checked again
    /// in this transaction, so an image a post took meanwhile stays); lists their blobs for
    /// `collectUnreferencedBlobs`. Answers the ids deleted.
    func deleteUnreferencedImages(ids: [String], createdBefore: Int64) async throws -> [String]

    // MARK: Image URLs

    /// Whether `sha` names a variant of an image that a post or a review shows: those are public, served
    /// to whoever has the URL without a signature (docs/platform.md, "Images").
    func isPublicVariant(_ sha: String) async throws -> Bool
}

extension ContentStore {
    /// Without quotas (store tests about the rows themselves).
    func insertImage(_ image: ImageRecord) async throws { try await insertImage(image, quotas: nil) }
    func createPost(_ post: PostRecord) async throws { try await createPost(post, quota: nil) }
    func createReview(_ review: ReviewRecord) async throws { try await createReview(review, quota: nil) }
}

/// An uploader's byte quotas: uploaded this Seoul day (images deleted since do not count), and stored.
struct UploadQuotas: Sendable {
    var perDay: Quota
    var total: Quota
}
