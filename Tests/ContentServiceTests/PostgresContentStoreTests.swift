import Foundation
import GRDB
import PostgresNIO
import PostgresTestSupport
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import XCTest
import YediProto

@testable import ContentService

/// The content contract against the PostgreSQL store, on a fresh database of its own per test; then what
/// needs replicas: two pools on one database, as two processes have, calling at once.
final class PostgresContentStoreTests: XCTestCase {
    /// The service's list: the runtime's tables, ContentService's six versions, then Housetainer's (whose
    /// tables image collection and account deletion read).
    static let migrations =
        RuntimePostgresSchema.migrations + ContentPostgresSchema.migrations + CommunityPostgresSchema.migrations

    private var database: TestDatabase?
    private var store: PostgresContentStore!

    override func setUp() async throws {
        let database = try await TestDatabase(service: "content", migrations: Self.migrations)
        self.database = database
        store = Self.store(on: database.postgres, replica: "a")
    }

    override func tearDown() async throws {
        try await database?.close()
        database = nil
    }

    static func store(on postgres: ServicePostgres, replica: String) -> PostgresContentStore {
        PostgresContentStore(
            postgres: postgres,
            outbox: Outbox(ids: SequentialIDGenerator(prefix: "job-\(replica)-"), clock: ManualClock()))
    }

    func testVersionsAreNamedAsOnSQLite() {
        var migrator = DatabaseMigrator()
        ContentSchema.migrate(&migrator)
        XCTAssertEqual(
            ContentPostgresSchema.migrations.map(\.name), migrator.migrations + [ContentPostgresSchema.imageBlobs.name],
            "the same versions, then the blob table SQLite has as files")
    }

    // MARK: Image bytes

    func testBlobsAreRowsWrittenOnceAndReadBack() async throws {
        let blobs = PostgresImageBlobStore(postgres: try XCTUnwrap(database).postgres)
        _ = try await ImageBlobStoreContract.writesOnceAndReadsBack(blobs)
    }

    func testOnlySHA256NamesAreAcceptedAsBlobNames() async throws {
        let blobs = PostgresImageBlobStore(postgres: try XCTUnwrap(database).postgres)
        try await ImageBlobStoreContract.onlySHA256NamesAreAccepted(blobs)
    }

    /// The collection deletes the bytes in its own transaction: `delete` on the blob store does not.
    func testCollectionDeletesTheBytesOfABlobNoImageNamesAndKeepsTheOthers() async throws {
        let blobs = PostgresImageBlobStore(postgres: try XCTUnwrap(database).postgres)
        let (gone, kept) = (String(repeating: "1", count: 64), String(repeating: "2", count: 64))
        for sha in [gone, kept] { _ = try await blobs.write([1, 2, 3], sha256: sha) }
        try await store.insertImage(ContentStoreContract.image("i1", owner: "c1", sha: gone))
        try await store.insertImage(ContentStoreContract.image("i2", owner: "c2", sha: kept))
        _ = try await store.purgeUser("c1", delivery: nil, now: 10)
        let told = LockedValue<[String]>([])
        let count = try await store.collectUnreferencedBlobs { sha in told.withLock { $0.append(sha) } }
        XCTAssertEqual(count, 1)
        XCTAssertEqual(told.value, [gone], "the caller still hears of it (to forget its caches)")
        let names = try await blobs.names()
        XCTAssertEqual(names, [kept])
    }

    func testPostsRoundTripWithTheirPhotosInOrder() async throws {
        try await ContentStoreContract.postsRoundTripWithTheirPhotosInOrder(store)
    }

    func testPagesCarryEachPostsOwnPhotosInOrder() async throws {
        try await ContentStoreContract.pagesCarryEachPostsOwnPhotosInOrder(store)
    }

    func testTenantRowsStayInTheirApp() async throws {
        try await ContentStoreContract.tenantRowsStayInTheirApp(store)
    }

    func testRecommendationsRankRecentLikesUpToTheSnapshot() async throws {
        try await ContentStoreContract.recommendationsRankRecentLikesUpToTheSnapshot(store)
    }

    func testModerationHidesAndFeaturesWithinTheApp() async throws {
        try await ContentStoreContract.moderationHidesAndFeaturesWithinTheApp(store)
        let logged = try await count("SELECT count(*) FROM runtime_outbox")
        XCTAssertEqual(logged, 5, "one operator-log job per change that changed something")
    }

    func testFeedsPageByTimeAndIdAndFilter() async throws {
        try await ContentStoreContract.feedsPageByTimeAndIdAndFilter(store)
    }

    func testLikesAreIdempotentAndExact() async throws {
        try await ContentStoreContract.likesAreIdempotentAndExact(store)
    }

    func testReviewsKeepTheirSummaryExact() async throws {
        try await ContentStoreContract.reviewsKeepTheirSummaryExact(store)
    }

    func testUnreferencedImagesAreFoundDeletedAndQuotasHold() async throws {
        try await ContentStoreContract.unreferencedImagesAreFoundDeletedAndQuotasHold(store)
    }

    func testPurgeRemovesTheUserAndListsOnlyUnreferencedBlobs() async throws {
        try await ContentStoreContract.purgeRemovesTheUserAndListsOnlyUnreferencedBlobs(store)
    }

    // MARK: Replicas (the contract's checks, then PostgreSQL's own: SQL counts, the blob rows)

    /// The contract's replica checks with three stores on three pools of one database.
    func testLikesOfOnePostByManyMembersOnReplicasAllCount() async throws {
        try await withReplicas { try await ContentStoreContract.likesOfOnePostByManyMembersOnReplicasAllCount($0) }
    }

    func testTheSameMemberLikingOnTwoReplicasAtOnceCountsOnce() async throws {
        try await withReplicas { try await ContentStoreContract.theSameMemberLikingOnTwoReplicasAtOnceCountsOnce($0) }
    }

    func testQuotasAtTheirLimitOnReplicasAdmitExactlyTheLimit() async throws {
        try await withReplicas { try await ContentStoreContract.quotasAtTheirLimitOnReplicasAdmitExactlyTheLimit($0) }
    }

    func testAPurgeDeliveredToTwoReplicasAtOnceIsFirstOnce() async throws {
        try await withReplicas { try await ContentStoreContract.aPurgeDeliveredToTwoReplicasAtOnceIsFirstOnce($0) }
    }

    /// Reviews of one designer written on two replicas while operators hide others of theirs at once: the
    /// summary always equals a count of the reviews shown (each recount under the designer's lock).
    func testSummariesStayExactUnderReviewsAndModerationOnTwoReplicas() async throws {
        try await withSecondReplica { other in
            let stores = [store!, other]
            for index in 0..<10 {
                try await store.createReview(
                    ContentStoreContract.review(
                        "m\(index)", reservation: "res-m\(index)", designer: "d1", customer: "c-m\(index)", score: 3,
                        keywords: [7, index % 3], photos: []))
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        try await stores[index % 2].createReview(
                            ContentStoreContract.review(
                                "r\(index)", reservation: "res\(index)", designer: "d1", customer: "c\(index)",
                                score: 1 + index % 5, keywords: [index % 3], photos: []))
                    }
                    guard index < 10 else { continue }
                    group.addTask {
                        let changed = try await stores[(index + 1) % 2].moderate(
                            ContentModerationChange(
                                kind: .review, id: "m\(index)", app: .yedi, action: .hide, atMilliseconds: 5),
                            log: YediModeration.RecordOperatorActionRequest(app: "yedi", id: "log-\(index)"))
                        XCTAssertTrue(changed)
                    }
                }
                try await group.waitForAll()
            }
            let summary = try await store.reviewSummaries(designerIDs: ["d1"]).first
            let shown = try await count("SELECT count(*) FROM review WHERE designer_id = 'd1' AND hidden_at_ms IS NULL")
            let total = try await count(
                "SELECT COALESCE(sum(score), 0)::bigint FROM review WHERE designer_id = 'd1' AND hidden_at_ms IS NULL")
            XCTAssertEqual(summary?.reviewCount, Int64(shown))
            XCTAssertEqual(summary?.scoreTotal, Int64(total))
            let keywords = try await count(
                """
                SELECT count(*) FROM review_keyword k JOIN review r ON r.id = k.review_id
                WHERE r.designer_id = 'd1' AND r.hidden_at_ms IS NULL
                """)
            XCTAssertEqual(summary?.keywordCounts.values.reduce(0, +), Int64(keywords))
        }
    }

    /// A post taking an image while another replica collects it as unreferenced, round after round: either
    /// the post has it and it stays, or the post is refused `imageGone` and it is gone; never an error.
    func testCollectionNeverDeletesAnImageAPostTakesMeanwhile() async throws {
        try await withSecondReplica { other in
            let store = try XCTUnwrap(self.store)
            for round in 0..<20 {
                let image = ContentStoreContract.image("i\(round)", owner: "d1")
                try await store.insertImage(image)
                async let posted: Bool = {
                    // Either side may start first: both outcomes happen.
                    try await Task.sleep(for: .microseconds(Int.random(in: 0...4_000)))
                    do {
                        try await other.createPost(ContentStoreContract.post("p\(round)", photos: [image], at: 5))
                        return true
                    } catch ContentStoreError.imageGone {
                        return false
                    }
                }()
                async let deleted: [String] = {
                    try await Task.sleep(for: .microseconds(Int.random(in: 0...4_000)))
                    return try await store.deleteUnreferencedImages(ids: [image.id], createdBefore: 2)
                }()
                let (post, gone) = try await (posted, deleted)
                XCTAssertNotEqual(post, gone == [image.id], "round \(round): posted \(post), deleted \(gone)")
                let stored = try await store.images(ids: [image.id])
                XCTAssertEqual(stored.isEmpty, !post, "round \(round)")
            }
        }
    }

    /// An upload naming a listed blob while another replica collects it, round after round, with the
    /// uploader's own repair (`ImageLibrary.add`: write the bytes again if gone after the commit): an image
    /// row's bytes are always there afterwards. The deletion is slowed so that the upload's commit lands
    /// in the middle of it.
    func testCollectingBlobsNeverDeletesOneAnUploadCommitsMeanwhile() async throws {
        try await withSecondReplica { other in
            let store = try XCTUnwrap(self.store)
            let postgres = try XCTUnwrap(database).postgres
            let files = BlobFiles()
            for round in 0..<15 {
                let sha = String(format: "%064d", round)
                files.write(sha)
                try await postgres.write { tx in
                    try await tx.query("INSERT INTO image_blob_garbage (sha256) VALUES (\(sha))")
                }
                async let collected = store.collectUnreferencedBlobs { name in
                    usleep(60_000)
                    files.delete(name)
                }
                async let uploaded: Void = {
                    try await Task.sleep(for: .milliseconds(20))
                    try await other.insertImage(ContentStoreContract.image("i\(round)", owner: "u1", sha: sha))
                    if !files.exists(sha) { files.write(sha) }
                }()
                _ = try await (collected, uploaded)
                XCTAssertTrue(files.exists(sha), "round \(round): an image row whose bytes were deleted")
            }
        }
    }

    /// Two owners of one blob's two images purged at once on two replicas: each purge still saw the other's
    /// image, so listing only the blobs unreferenced at that moment listed it in neither, and its bytes
    /// stayed forever. Every purged image's blobs are listed (the collection checks again).
    func testABlobSharedByTwoImagesPurgedAtOnceIsCollected() async throws {
        try await withSecondReplica { other in
            let store = try XCTUnwrap(self.store)
            for round in 0..<10 {
                let sha = String(format: "%064x", round + 1)
                try await store.insertImage(ContentStoreContract.image("a\(round)", owner: "ua\(round)", sha: sha))
                try await store.insertImage(ContentStoreContract.image("b\(round)", owner: "ub\(round)", sha: sha))
                async let first = store.purgeUser("ua\(round)", delivery: nil, now: 10)
                async let second = other.purgeUser("ub\(round)", delivery: nil, now: 10)
                _ = try await (first, second)
                let deleted = LockedValue<[String]>([])
                _ = try await store.collectUnreferencedBlobs { sha in deleted.withLock { $0.append(sha) } }
                XCTAssertEqual(deleted.value, [sha], "round \(round): the shared blob was not collected")
            }
        }
    }

    // MARK: Helpers

    /// Three stores on three pools of the database, as three replicas would have.
    private func withReplicas(_ body: ([any ContentStore]) async throws -> Void) async throws {
        let database = try XCTUnwrap(database)
        try await database.withSecondPool { second in
            try await database.withSecondPool { third in
                try await body([store!, Self.store(on: second, replica: "b"), Self.store(on: third, replica: "c")])
            }
        }
    }

    /// Runs `body` with a second replica's store: its own pool on the same database.
    private func withSecondReplica(_ body: (PostgresContentStore) async throws -> Void) async throws {
        try await XCTUnwrap(database).withSecondPool { postgres in
            try await body(Self.store(on: postgres, replica: "b"))
        }
    }

    private func count(_ query: PostgresQuery) async throws -> Int {
        try await XCTUnwrap(database).postgres.snapshot { tx in try await tx.query(query).first?.decode(Int.self) ?? -1
        }
    }
}

/// The blob files a test pretends to keep: written, deleted, looked for, from any thread.
private final class BlobFiles: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Set<String> = []
    func write(_ name: String) { _ = lock.withLock { stored.insert(name) } }
    func delete(_ name: String) { _ = lock.withLock { stored.remove(name) } }
    func exists(_ name: String) -> Bool { lock.withLock { stored.contains(name) } }
}
