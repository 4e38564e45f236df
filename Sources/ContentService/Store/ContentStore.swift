import RPCCore
import ServiceRuntime

/// Where ContentService keeps its rows. Handlers see only this protocol (the SQLite implementation is
/// `SQLiteContentStore`), so a second engine can replace it and the same contract tests run against both.
///
/// Every method is one transaction.
protocol ContentStore: Sendable {
    // MARK: Images

    func insertImage(_ image: ImageRecord) async throws
    /// The images among `ids` that exist, in no particular order.
    func images(ids: [String]) async throws -> [ImageRecord]

    // MARK: Posts

    /// Adds the post with its photos (`post.photos` in order; only their ids are used).
    func createPost(_ post: PostRecord) async throws
    /// Replaces title, description, price, category, photos and the update time; keeps likes and the
    /// creation time. `ContentStoreError.notFound` if the post does not exist.
    func updatePost(_ post: PostRecord) async throws
    /// Deletes the post, its photo list and its likes; false if there was no such post.
    func deletePost(id: String) async throws -> Bool
    func post(id: String) async throws -> PostRecord?
    /// The posts among `ids` that exist, in no particular order.
    func posts(ids: [String]) async throws -> [PostRecord]
    /// Newest first by (creation time, id), strictly after `position`.
    func posts(_ filter: PostFilter, after position: ListPosition?, limit: Int) async throws -> [PostRecord]

    // MARK: Likes

    /// Idempotent; returns the post's like count. `ContentStoreError.notFound` if no such post.
    func like(postID: String, userID: String, now: Int64) async throws -> Int64
    /// Idempotent; returns the post's like count. `ContentStoreError.notFound` if no such post.
    func unlike(postID: String, userID: String) async throws -> Int64
    /// Which of `postIDs` the user likes.
    func likedPostIDs(userID: String, among postIDs: [String]) async throws -> Set<String>
    /// The user's liked posts, newest like first, after `position` (the like time and post id).
    func likedPosts(userID: String, after position: ListPosition?, limit: Int) async throws -> [(
        PostRecord, ListPosition
    )]

    // MARK: Reviews

    /// Adds the review and updates the designer's summary in the same transaction.
    /// `ContentStoreError.alreadyReviewed` if the reservation has a review.
    func createReview(_ review: ReviewRecord) async throws
    /// Newest first by (creation time, id).
    func reviews(designerID: String, after position: ListPosition?, limit: Int) async throws -> [ReviewRecord]
    func reviews(customerID: String, after position: ListPosition?, limit: Int) async throws -> [ReviewRecord]
    /// One per id asked for, in that order (an empty summary for a designer without reviews).
    func reviewSummaries(designerIDs: [String]) async throws -> [ReviewSummaryRecord]

    // MARK: Account deletion

    /// Removes what the user authored or liked (posts with their likes, likes with the counts they
    /// changed, reviews written by or about them with the summaries recomputed, their images) and records
    /// the blobs no image refers to any more for `collectUnreferencedBlobs`. `delivery` (the PurgeUser
    /// call) goes to the receipt ledger. Idempotent.
    func purgeUser(_ userID: String, delivery: Delivery?, now: Int64) async throws -> PurgeOutcome
    /// Calls `delete` for each recorded blob that still no image refers to, then forgets it; returns how
    /// many were deleted. Runs in one write transaction, so no upload can claim a blob meanwhile.
    func collectUnreferencedBlobs(_ delete: @escaping @Sendable (String) throws -> Void) async throws -> Int
}
