import GRDB
import ServiceRuntime

/// Quota counts and the collection of unreferenced images, apart from the main store file.
extension SQLiteContentStore {
    /// What no post, review, Housetainer event or house uses and nothing pinned (ChatService's image
    /// messages). Events and houses reference their images rather than pin them: an image an event or house
    /// no longer shows (deleted, or its images replaced) is collectable, one another still shows is not.
    private static let unreferenced = """
        pinned_at_ms IS NULL
        AND NOT EXISTS (SELECT 1 FROM post_image WHERE post_image.image_id = image.id)
        AND NOT EXISTS (SELECT 1 FROM review_image WHERE review_image.image_id = image.id)
        AND NOT EXISTS (SELECT 1 FROM housetainer_event_image AS e WHERE e.image_id = image.id)
        AND NOT EXISTS (SELECT 1 FROM housetainer_house_image AS h WHERE h.image_id = image.id)
        """

    func pinImages(ids: [String], now: Int64) async throws {
        guard !ids.isEmpty else { return }
        try await database.write { db in
            try db.execute(
                sql:
                    "UPDATE image SET pinned_at_ms = ? WHERE pinned_at_ms IS NULL AND id IN (\(Self.marks(ids.count)))",
                arguments: StatementArguments([now]) + StatementArguments(ids))
        }
    }

    func unreferencedImages(createdBefore: Int64, after: ImageRecord?, limit: Int) async throws -> [ImageRecord] {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM image
                    WHERE created_at_ms < ? AND (created_at_ms, id) > (?, ?) AND \(Self.unreferenced)
                    ORDER BY created_at_ms, id LIMIT ?
                    """,
                arguments: [createdBefore, after?.createdAtMilliseconds ?? Int64.min, after?.id ?? "", limit]
            ).map(Self.image)
        }
    }

    func deleteUnreferencedImages(ids: [String], createdBefore: Int64) async throws -> [String] {
        guard !ids.isEmpty else { return [] }
        return try await database.write { db in
            let doomed = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM image
                    WHERE id IN (\(Self.marks(ids.count))) AND created_at_ms < ? AND \(Self.unreferenced)
                    """, arguments: StatementArguments(ids) + StatementArguments([createdBefore]))
            for image in doomed.map(Self.image) {
                try db.execute(sql: "DELETE FROM image WHERE id = ?", arguments: [image.id])
                try Self.listForCollection(image.blobNames.filter { try !Self.isReferenced($0, db) }, db)
            }
            return doomed.map { $0["id"] }
        }
    }

    func isPublicVariant(_ sha: String) async throws -> Bool {
        try await database.read { db in
            try Bool.fetchOne(
                db,
                sql: """
                    SELECT EXISTS (
                        SELECT 1 FROM image WHERE (large_sha256 = ? OR thumbnail_sha256 = ?)
                        AND (EXISTS (SELECT 1 FROM post_image WHERE post_image.image_id = image.id)
                            OR EXISTS (SELECT 1 FROM review_image WHERE review_image.image_id = image.id))
                    )
                    """, arguments: [sha, sha]) ?? false
        }
    }

    /// The first quota of `quotas` that `image` would pass, if any.
    static func exceeded(_ quotas: UploadQuotas, by image: ImageRecord, _ db: Database) throws -> QuotaExceeded? {
        let adding = Int64(image.byteCount)
        let today =
            try Int64.fetchOne(
                db, sql: "SELECT COALESCE(SUM(byte_count), 0) FROM image WHERE owner_id = ? AND created_at_ms >= ?",
                arguments: [image.ownerID, QuotaDay.start(of: image.createdAtMilliseconds)]) ?? 0
        let stored =
            try Int64.fetchOne(
                db, sql: "SELECT COALESCE(SUM(byte_count), 0) FROM image WHERE owner_id = ?",
                arguments: [image.ownerID]) ?? 0
        if today + adding > quotas.perDay.limit { return QuotaExceeded(quota: quotas.perDay) }
        if stored + adding > quotas.total.limit { return QuotaExceeded(quota: quotas.total) }
        return nil
    }

    /// Rows of `table` whose `column` is `value`, created since the Seoul day of `now` began.
    static func count(_ db: Database, table: String, column: String, _ value: String, since now: Int64) throws -> Int64
    {
        try Int64.fetchOne(
            db, sql: "SELECT COUNT(*) FROM \(table) WHERE \(column) = ? AND created_at_ms >= ?",
            arguments: [value, QuotaDay.start(of: now)]) ?? 0
    }
}
