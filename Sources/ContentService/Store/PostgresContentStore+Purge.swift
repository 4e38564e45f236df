import PostgresNIO
import ServiceRuntime

/// Account deletion's part in ContentService: one transaction with the delivery's receipt, so two
/// replicas given the same PurgeUser at once agree on which saw it first (the second waits for the
/// first's commit on the receipt's key).
extension PostgresContentStore {
    func purgeUser(_ userID: String, delivery: Delivery?, now: Int64) async throws -> PurgeOutcome {
        try await postgres.write { tx in
            var first = true
            if let delivery {
                first = try await ReceiptLedger.isFirstDelivery(in: tx, delivery, nowMilliseconds: now)
            }
            // Their likes, each count moved by exactly the rows this statement deleted (a like or unlike
            // of theirs committing meanwhile is counted once either way).
            try await tx.query(
                """
                WITH gone AS (DELETE FROM post_like WHERE user_id = \(userID) RETURNING post_id)
                UPDATE post SET like_count = like_count - 1 WHERE id IN (SELECT post_id FROM gone)
                """)
            // Their posts (photo lists and others' likes go with them).
            try await tx.query("DELETE FROM post WHERE designer_id = \(userID)")
            // Reviews they wrote, and reviews about them; the summaries of the designers they reviewed are
            // counted again from what remains, under the designers' locks.
            let reviewed = try await tx.query(
                "SELECT DISTINCT designer_id FROM review WHERE customer_id = \(userID) AND designer_id <> \(userID)"
            ).map { try $0.decode(String.self) }
            try await Self.lockSummaries(reviewed + [userID], tx)
            let deletedFor = try await tx.query(
                "DELETE FROM review WHERE customer_id = \(userID) OR designer_id = \(userID) RETURNING designer_id"
            ).map { try $0.decode(String.self) }
            // A review of theirs that committed after the first read: its designer's lock too, taken late.
            let late = Set(deletedFor).subtracting(reviewed + [userID])
            try await Self.lockSummaries(late, tx)
            try await tx.query("DELETE FROM review_summary WHERE designer_id = \(userID)")
            for designerID in Set(reviewed).union(late).sorted() { try await Self.recomputeSummary(designerID, tx) }
            // Housetainer: their events, houses, comments, bookmarks, notifications and blocks.
            try await PostgresCommunityStore.forget(userID, tx)
            // Their images that nothing references any more (by the upload rules, all of them): held
            // first, then checked in a statement of its own (see `+Collection`).
            let held = try await tx.query("SELECT id FROM image WHERE owner_id = \(userID) ORDER BY id FOR UPDATE")
                .map { try $0.decode(String.self) }
            let images =
                held.isEmpty
                ? []
                : try await tx.query(
                    """
                    DELETE FROM image WHERE id = ANY(\(held))
                        AND NOT EXISTS (SELECT 1 FROM post_image WHERE post_image.image_id = image.id)
                        AND NOT EXISTS (SELECT 1 FROM review_image WHERE review_image.image_id = image.id)
                    RETURNING *
                    """
                ).map(Self.image)
            try await Self.listUnreferenced(images.flatMap(\.blobNames), tx)
            return PurgeOutcome(removedImageIDs: images.map(\.id), firstDelivery: first)
        }
    }
}
