import Foundation
import GRDB
import Logging
import RPCAccess
import ServiceRuntime
import XCTest

@testable import ContentService

/// `content-6-apps` on a database filled before apps existed: every image and like is YeDi's, and YeDi's
/// lists still show them.
final class ContentMigrationTests: XCTestCase {
    func testTenantAContentDatabaseFromBeforeAppsKeepsEveryRowInYeDi() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("yedi-content-migration-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let old = try DatabaseQueue(
                path: URL(fileURLWithPath: directory).appendingPathComponent("content.sqlite").path)
            var migrator = DatabaseMigrator()
            ContentSchema.migrate(&migrator)
            try migrator.migrate(old, upTo: "content-5-image-variants")
            try await old.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO image (id, owner_id, sha256, content_type, width, height, byte_count,
                            created_at_ms, pinned_at_ms)
                        VALUES ('i1', 'd1', 'aa', 'image/png', 4, 3, 100, 1, 1);
                        INSERT INTO post (id, designer_id, title, description, price_krw, category, like_count,
                            created_at_ms, updated_at_ms)
                        VALUES ('p1', 'd1', 't', 'd', 1000, 1, 1, 10, 10);
                        INSERT INTO post_like (post_id, user_id, liked_at_ms) VALUES ('p1', 'c1', 20);
                        """)
            }
            try old.close()
        }
        let database = try ServiceDatabase.open(
            directory: directory, name: "content", migrations: ContentSchema.migrate, logger: Logger(label: "test"))
        defer { try? database.close() }
        let store = SQLiteContentStore(
            database: database, outbox: Outbox(ids: SequentialIDGenerator(prefix: "job"), clock: ManualClock()))

        let images = try await store.images(ids: ["i1"])
        XCTAssertEqual(images.map(\.app), [.yedi])
        let post = try await store.post(id: "p1")
        XCTAssertEqual(post?.app, .yedi)
        let liked = try await store.likedPosts(userID: "c1", app: .yedi, after: nil, limit: 10)
        XCTAssertEqual(liked.map(\.0.id), ["p1"])
        let elsewhere = try await store.likedPosts(userID: "c1", app: "zipadoo", after: nil, limit: 10)
        XCTAssertTrue(elsewhere.isEmpty)
    }
}
