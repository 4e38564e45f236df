import PostgresNIO
import RPCAccess
import ServiceRuntime

/// Reviews and their designers' summaries. Every change of a summary (a review added, hidden, shown or
/// purged) runs under the designer's advisory lock (`lockSummaries`), so an increment and a recount never
/// interleave; the customer's daily quota is counted under the customer's.
extension PostgresContentStore {
    func createReview(_ review: ReviewRecord, quota: Quota?) async throws {
        do {
            try await postgres.write { tx in
                if let quota {
                    // Customer first, then designer: the one order every transaction takes them in.
                    try await Self.lock("yedi.content.reviews/" + review.customerID, tx)
                    let dayStart = QuotaDay.start(of: review.createdAtMilliseconds)
                    try quota.check(
                        used: try await Self.count(
                            """
                            SELECT count(*) FROM review
                            WHERE customer_id = \(review.customerID) AND created_at_ms >= \(dayStart)
                            """, tx))
                }
                try await Self.lockSummaries([review.designerID], tx)
                try await tx.query(
                    """
                    INSERT INTO review (id, app, reservation_id, designer_id, customer_id, score, text, created_at_ms)
                    VALUES (\(review.id), \(review.app.rawValue), \(review.reservationID), \(review.designerID),
                        \(review.customerID), \(review.score), \(review.text), \(review.createdAtMilliseconds))
                    """)
                try await Self.insertPhotos(.reviews, id: review.id, review.photos, tx)
                try await tx.query(
                    """
                    INSERT INTO review_keyword (review_id, position, keyword)
                    SELECT \(review.id), ordinality - 1, keyword FROM unnest(\(review.keywords.map(Int64.init))::bigint[])
                        WITH ORDINALITY AS given(keyword, ordinality)
                    """)
                // The summary moves with the review, in this transaction.
                try await tx.query(
                    """
                    INSERT INTO review_summary (designer_id, review_count, score_total)
                    VALUES (\(review.designerID), 1, \(review.score))
                    ON CONFLICT (designer_id) DO UPDATE SET review_count = review_summary.review_count + 1,
                        score_total = review_summary.score_total + excluded.score_total
                    """)
                try await tx.query(
                    """
                    INSERT INTO review_keyword_count (designer_id, keyword, count)
                    SELECT \(review.designerID), keyword, 1
                    FROM unnest(\(Array(Set(review.keywords)).map(Int64.init))::bigint[]) AS picked(keyword)
                    ON CONFLICT (designer_id, keyword) DO UPDATE SET count = review_keyword_count.count + 1
                    """)
            }
        } catch let violation as PostgresConstraintViolation
            where violation.isUniqueViolation && violation.constraint == "review_reservation_id_key"
        {
            throw ContentStoreError.alreadyReviewed
        }
    }

    func reviews(designerID: String, app: AppID, after position: ListPosition?, limit: Int) async throws
        -> [ReviewRecord]
    {
        try await reviews(
            column: "designer_id", value: designerID, app: app, withHidden: false, after: position, limit: limit)
    }

    /// A customer's own reviews, the hidden ones too (marked): their writer is told, not deceived.
    func reviews(customerID: String, app: AppID, after position: ListPosition?, limit: Int) async throws
        -> [ReviewRecord]
    {
        try await reviews(
            column: "customer_id", value: customerID, app: app, withHidden: true, after: position, limit: limit)
    }

    /// `column` is one of two fixed names; every value is a bind. The page, its keywords and its photos
    /// in one statement (`withPhotos`).
    private func reviews(
        column: String, value: String, app: AppID, withHidden: Bool, after position: ListPosition?, limit: Int
    ) async throws -> [ReviewRecord] {
        try await Self.withPhotos(
            """
            WITH page AS (
                SELECT review.*, ARRAY(
                    SELECT keyword FROM review_keyword k WHERE k.review_id = review.id ORDER BY k.position
                ) AS keywords
                FROM review
                WHERE \(unescaped: column) = \(value) AND app = \(app.rawValue) AND (\(withHidden) OR hidden_at_ms IS NULL)
                    AND (\(position?.key)::bigint IS NULL OR (created_at_ms, id) < (\(position?.key), \(position?.id)))
                ORDER BY created_at_ms DESC, id DESC LIMIT \(limit)
            )
            \(unescaped: Self.withPhotosTail(.reviews, order: "page.created_at_ms DESC, page.id DESC"))
            """, postgres,
            make: { found in
                var review = try Self.review(found)
                review.keywords = try found.makeRandomAccess()["keywords"].decode([Int].self)
                return review
            }, id: \.id, addPhoto: { $0.photos.append($1) })
    }

    func reviewSummaries(designerIDs: [String]) async throws -> [ReviewSummaryRecord] {
        guard !designerIDs.isEmpty else { return [] }
        return try await postgres.snapshot { tx in
            let unique = Array(Set(designerIDs))
            var found: [String: ReviewSummaryRecord] = [:]
            for row in try await tx.query(
                "SELECT designer_id, review_count, score_total FROM review_summary WHERE designer_id = ANY(\(unique))")
            {
                let (id, count, total) = try row.decode((String, Int64, Int64).self)
                found[id] = ReviewSummaryRecord(
                    designerID: id, reviewCount: count, scoreTotal: total, keywordCounts: [:])
            }
            for row in try await tx.query(
                "SELECT designer_id, keyword, count FROM review_keyword_count WHERE designer_id = ANY(\(unique))")
            {
                let (id, keyword, count) = try row.decode((String, Int, Int64).self)
                found[id]?.keywordCounts[keyword] = count
            }
            return designerIDs.map { found[$0] ?? .empty($0) }
        }
    }

    // MARK: Summaries

    /// Takes the designers' summary locks (in id order, the one order every transaction takes them in).
    static func lockSummaries(_ designerIDs: some Sequence<String>, _ tx: PostgresTransaction) async throws {
        for designerID in Set(designerIDs).sorted() {
            try await lock("yedi.content.review-summary/" + designerID, tx)
        }
    }

    /// Counts the designer's summary again from the reviews shown; the caller holds its lock.
    static func recomputeSummary(_ designerID: String, _ tx: PostgresTransaction) async throws {
        try await tx.query("DELETE FROM review_summary WHERE designer_id = \(designerID)")
        try await tx.query(
            """
            INSERT INTO review_summary (designer_id, review_count, score_total)
            SELECT designer_id, count(*), sum(score) FROM review
            WHERE designer_id = \(designerID) AND hidden_at_ms IS NULL GROUP BY designer_id
            """)
        try await tx.query(
            """
            INSERT INTO review_keyword_count (designer_id, keyword, count)
            SELECT review.designer_id, review_keyword.keyword, count(*) FROM review_keyword
            JOIN review ON review.id = review_keyword.review_id
            WHERE review.designer_id = \(designerID) AND review.hidden_at_ms IS NULL
            GROUP BY review.designer_id, review_keyword.keyword
            """)
    }
}
