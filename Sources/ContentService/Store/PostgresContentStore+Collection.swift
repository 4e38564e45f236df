import PostgresNIO
import ServiceRuntime

/// Pins, the collection of unreferenced images, and the blob garbage list.
///
/// An image row is deleted only while this transaction holds it `FOR UPDATE` and after a re-check in a
/// statement that started after the lock: a post or review taking the image holds it `FOR KEY SHARE`
/// (`insertPhotos`, and the foreign key's own check) until it commits, so either it committed first and
/// the re-check sees its row, or it waits for the deletion and finds the image gone (`imageGone`). Rows a
/// taker holds are skipped (`SKIP LOCKED`): collection comes back to them. Events and houses name images
/// without a foreign key; their store holds the images it names the same way.
///
/// A blob's bytes (their `image_blob` row, deleted in the collection's transaction; or a file, whose
/// deletion the transaction calls) go only under the blob's advisory lock (`lockBlobs`), which an upload
/// naming it holds from before its image row until the commit: a collection that gets the lock first
/// deletes the bytes and commits before the upload's row exists (the upload then writes the bytes again,
/// see `ImageLibrary.upload`); one that gets it after sees the committed row and keeps them. Collection only
/// tries the locks, so it never waits for an upload, and takes them in name order.
extension PostgresContentStore {
    /// What no post, review, Housetainer event or house uses and nothing pinned (ChatService's image
    /// messages): as `SQLiteContentStore`'s.
    static let unreferenced = """
        image.pinned_at_ms IS NULL
        AND NOT EXISTS (SELECT 1 FROM post_image WHERE post_image.image_id = image.id)
        AND NOT EXISTS (SELECT 1 FROM review_image WHERE review_image.image_id = image.id)
        AND NOT EXISTS (SELECT 1 FROM housetainer_event_image AS e WHERE e.image_id = image.id)
        AND NOT EXISTS (SELECT 1 FROM housetainer_house_image AS h WHERE h.image_id = image.id)
        """

    func pinImages(ids: [String], now: Int64) async throws {
        guard !ids.isEmpty else { return }
        try await postgres.write { tx in
            try await tx.query("UPDATE image SET pinned_at_ms = \(now) WHERE pinned_at_ms IS NULL AND id = ANY(\(ids))")
        }
    }

    func unreferencedImages(createdBefore: Int64, after: ImageRecord?, limit: Int) async throws -> [ImageRecord] {
        try await postgres.snapshot { tx in
            try await tx.query(
                """
                SELECT * FROM image
                WHERE created_at_ms < \(createdBefore)
                    AND (\(after?.createdAtMilliseconds)::bigint IS NULL
                        OR (created_at_ms, id) > (\(after?.createdAtMilliseconds), \(after?.id)))
                    AND \(unescaped: Self.unreferenced)
                ORDER BY created_at_ms, id LIMIT \(limit)
                """
            ).map(Self.image)
        }
    }

    func deleteUnreferencedImages(ids: [String], createdBefore: Int64) async throws -> [String] {
        guard !ids.isEmpty else { return [] }
        return try await postgres.write { tx in
            let held = try await tx.query(
                """
                SELECT id FROM image WHERE id = ANY(\(ids)) AND created_at_ms < \(createdBefore)
                ORDER BY id FOR UPDATE SKIP LOCKED
                """
            ).map { try $0.decode(String.self) }
            guard !held.isEmpty else { return [] }
            // A statement of its own, after the locks: it sees every reference that committed before them.
            let doomed = try await tx.query(
                "DELETE FROM image WHERE id = ANY(\(held)) AND \(unescaped: Self.unreferenced) RETURNING *"
            ).map(Self.image)
            try await Self.listUnreferenced(doomed.flatMap(\.blobNames), tx)
            return doomed.map(\.id)
        }
    }

    func isPublicVariant(_ sha: String) async throws -> Bool {
        try await postgres.snapshot { tx in
            try await tx.query(
                """
                SELECT EXISTS (
                    SELECT 1 FROM image WHERE (large_sha256 = \(sha) OR thumbnail_sha256 = \(sha))
                    AND (EXISTS (SELECT 1 FROM post_image WHERE post_image.image_id = image.id)
                        OR EXISTS (SELECT 1 FROM review_image WHERE review_image.image_id = image.id))
                )
                """
            ).first?.decode(Bool.self) ?? false
        }
    }

    func collectUnreferencedBlobs(_ delete: @escaping @Sendable (String) throws -> Void) async throws -> Int {
        try await postgres.write { tx in
            var deleted = 0
            let listed = try await tx.query(
                "SELECT sha256 FROM image_blob_garbage ORDER BY sha256 FOR UPDATE SKIP LOCKED"
            )
            .map { try $0.decode(String.self) }
            for sha in listed {
                // An upload naming the blob holds its lock to its commit: leave the blob to a later run.
                guard try await Self.tryLockBlob(sha, tx) else { continue }
                if try await !Self.isReferenced(sha, tx) {
                    // The bytes (`PostgresImageBlobStore`) go with this transaction; `delete` forgets the
                    // caches (and would delete a file: twice, on a re-run of this transaction, is harmless).
                    try await tx.query("DELETE FROM image_blob WHERE sha256 = \(sha)")
                    try delete(sha)
                    deleted += 1
                }
                try await tx.query("DELETE FROM image_blob_garbage WHERE sha256 = \(sha)")
            }
            return deleted
        }
    }

    // MARK: Blobs

    /// Whether an image row names `sha` (as its original or one of its variants), as committed now.
    static func isReferenced(_ sha: String, _ tx: PostgresTransaction) async throws -> Bool {
        try await tx.query(
            """
            SELECT EXISTS (SELECT 1 FROM image WHERE sha256 = \(sha))
                OR EXISTS (SELECT 1 FROM image WHERE large_sha256 = \(sha))
                OR EXISTS (SELECT 1 FROM image WHERE thumbnail_sha256 = \(sha))
            """
        ).first?.decode(Bool.self) ?? false
    }

    /// Lists `shas` (the blobs of images this transaction deleted) for `collectUnreferencedBlobs`, which
    /// deletes those no image names by then. All of them, not only those unreferenced now: two deletions
    /// at once of two images sharing a blob would each still see the other's image and list nothing.
    /// Under the blobs' advisory locks: a collection holding one has its garbage row locked, and an insert
    /// meeting that row would do nothing and be lost when the collection deletes it; waiting for the lock,
    /// the insert comes after.
    static func listUnreferenced(_ shas: [String], _ tx: PostgresTransaction) async throws {
        try await lockBlobs(shas, tx)
        try await listForCollection(Array(Set(shas)).sorted(), tx)
    }

    /// Lists blobs for `collectUnreferencedBlobs`, which deletes those no image names by then.
    static func listForCollection(_ shas: [String], _ tx: PostgresTransaction) async throws {
        guard !shas.isEmpty else { return }
        try await tx.query(
            "INSERT INTO image_blob_garbage (sha256) SELECT unnest(\(shas)::text[]) ON CONFLICT DO NOTHING")
    }

    /// The blobs' advisory locks, held until the transaction ends, taken in name order.
    static func lockBlobs(_ shas: [String], _ tx: PostgresTransaction) async throws {
        for sha in Set(shas).sorted() { try await lock(blobLock(sha), tx) }
    }

    /// The blob's advisory lock if nobody holds it; false (and nothing held) otherwise.
    static func tryLockBlob(_ sha: String, _ tx: PostgresTransaction) async throws -> Bool {
        try await tx.query("SELECT pg_try_advisory_xact_lock(hashtextextended(\(blobLock(sha)), 0))")
            .first?.decode(Bool.self) ?? false
    }

    private static func blobLock(_ sha: String) -> String { "yedi.content.blob/" + sha }

    // MARK: Quotas

    /// The first quota of `quotas` that `image` would pass, if any; the caller holds the owner's lock.
    static func exceeded(_ quotas: UploadQuotas, by image: ImageRecord, _ tx: PostgresTransaction) async throws
        -> QuotaExceeded?
    {
        let adding = Int64(image.byteCount)
        let dayStart = QuotaDay.start(of: image.createdAtMilliseconds)
        let sums = try await tx.query(
            """
            SELECT COALESCE(sum(byte_count) FILTER (WHERE created_at_ms >= \(dayStart)), 0)::bigint,
                COALESCE(sum(byte_count), 0)::bigint
            FROM image WHERE owner_id = \(image.ownerID)
            """)
        guard let (today, stored) = try sums.first?.decode((Int64, Int64).self) else { return nil }
        if today + adding > quotas.perDay.limit { return QuotaExceeded(quota: quotas.perDay) }
        if stored + adding > quotas.total.limit { return QuotaExceeded(quota: quotas.total) }
        return nil
    }
}
