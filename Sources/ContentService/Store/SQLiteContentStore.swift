import GRDB
import RPCAccess
import RPCCore
import ServiceRuntime

/// `ContentStore` on the service's SQLite database (GRDB).
struct SQLiteContentStore: ContentStore {
    let database: ServiceDatabase
    /// Operator actions go to AccountService's log through it, in the transaction that takes them.
    let outbox: Outbox

    // MARK: Images

    func insertImage(_ image: ImageRecord, quotas: UploadQuotas?) async throws {
        let refusal = try await database.write { db -> QuotaExceeded? in
            if let quotas, let exceeded = try Self.exceeded(quotas, by: image, db) {
                // The blobs are already written: list them, so that they go unless another image uses them.
                try Self.listForCollection(image.blobNames, db)
                return exceeded
            }
            try db.execute(
                sql: """
                    INSERT INTO image (id, owner_id, app, sha256, content_type, width, height, byte_count,
                        created_at_ms, large_sha256, thumbnail_sha256)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    image.id, image.ownerID, image.app.rawValue, image.sha256, image.contentType, image.width,
                    image.height,
                    image.byteCount, image.createdAtMilliseconds, image.variants?.large, image.variants?.thumbnail,
                ])
            // The blobs are wanted again: a pending deletion of them must not run.
            let names = image.blobNames
            try db.execute(
                sql: "DELETE FROM image_blob_garbage WHERE sha256 IN (\(Self.marks(names.count)))",
                arguments: StatementArguments(names))
            return nil
        }
        if let refusal { throw refusal }
    }

    func images(ids: [String]) async throws -> [ImageRecord] {
        guard !ids.isEmpty else { return [] }
        return try await database.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM image WHERE id IN (\(Self.marks(ids.count)))",
                arguments: StatementArguments(ids)
            ).map(Self.image)
        }
    }

    // MARK: Posts

    func createPost(_ post: PostRecord, quota: Quota?) async throws {
        try await database.write { db in
            if let quota {
                try quota.check(
                    used: try Self.count(
                        db, table: "post", column: "designer_id", post.designerID, since: post.createdAtMilliseconds))
            }
            try db.execute(
                sql: """
                    INSERT INTO post (id, app, designer_id, title, description, price_krw, category, like_count,
                        created_at_ms, updated_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)
                    """,
                arguments: [
                    post.id, post.app.rawValue, post.designerID, post.title, post.description, post.priceKRW,
                    post.category,
                    post.createdAtMilliseconds, post.updatedAtMilliseconds,
                ])
            try Self.insertPhotos(table: "post_image", owner: "post_id", id: post.id, post.photos, db)
        }
    }

    func updatePost(_ post: PostRecord) async throws {
        try await database.write { db in
            try db.execute(
                sql: """
                    UPDATE post SET title = ?, description = ?, price_krw = ?, category = ?, updated_at_ms = ?
                    WHERE id = ?
                    """,
                arguments: [
                    post.title, post.description, post.priceKRW, post.category, post.updatedAtMilliseconds, post.id,
                ])
            guard db.changesCount > 0 else { throw ContentStoreError.notFound }
            try db.execute(sql: "DELETE FROM post_image WHERE post_id = ?", arguments: [post.id])
            try Self.insertPhotos(table: "post_image", owner: "post_id", id: post.id, post.photos, db)
        }
    }

    func deletePost(id: String) async throws -> Bool {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM post WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }
    }

    func post(id: String) async throws -> PostRecord? {
        try await posts(ids: [id]).first
    }

    func posts(ids: [String]) async throws -> [PostRecord] {
        guard !ids.isEmpty else { return [] }
        return try await database.read { db in
            try Self.withPhotos(
                Row.fetchAll(
                    db, sql: "SELECT * FROM post WHERE id IN (\(Self.marks(ids.count)))",
                    arguments: StatementArguments(ids)
                ).map(Self.post), db)
        }
    }

    func posts(_ filter: PostFilter, after position: ListPosition?, limit: Int) async throws -> [PostRecord] {
        if let designers = filter.designerIDs, designers.isEmpty { return [] }
        return try await database.read { db in
            var conditions = ["app = ?", "hidden_at_ms IS NULL"]
            var arguments: StatementArguments = [filter.app.rawValue]
            let order = filter.featuredOnly ? "featured_at_ms" : "created_at_ms"
            if filter.featuredOnly { conditions.append("featured_at_ms IS NOT NULL") }
            if let designers = filter.designerIDs {
                // Through json_each: one bound value however many designers are followed.
                conditions.append("designer_id IN (SELECT value FROM json_each(?))")
                _ = arguments.append(contentsOf: [Self.jsonArray(designers)])
            }
            if let category = filter.category {
                conditions.append("category = ?")
                _ = arguments.append(contentsOf: [category])
            }
            if let position {
                conditions.append("(\(order) < ? OR (\(order) = ? AND id < ?))")
                _ = arguments.append(contentsOf: [position.key, position.key, position.id])
            }
            _ = arguments.append(contentsOf: [limit])
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM post WHERE \(conditions.joined(separator: " AND "))
                    ORDER BY \(order) DESC, id DESC LIMIT ?
                    """,
                arguments: arguments)
            return try Self.withPhotos(rows.map(Self.post), db)
        }
    }

    // MARK: Likes

    func like(postID: String, userID: String, app: AppID, now: Int64) async throws -> Int64 {
        try await database.write { db in
            guard
                try Int.fetchOne(
                    db, sql: "SELECT 1 FROM post WHERE id = ? AND app = ? AND hidden_at_ms IS NULL",
                    arguments: [postID, app.rawValue])
                    != nil
            else { throw ContentStoreError.notFound }
            try db.execute(
                sql: "INSERT OR IGNORE INTO post_like (post_id, user_id, app, liked_at_ms) VALUES (?, ?, ?, ?)",
                arguments: [postID, userID, app.rawValue, now])
            if db.changesCount > 0 {
                try db.execute(sql: "UPDATE post SET like_count = like_count + 1 WHERE id = ?", arguments: [postID])
            }
            return try Self.likeCount(postID, db) ?? 0
        }
    }

    func unlike(postID: String, userID: String, app: AppID) async throws -> Int64 {
        try await database.write { db in
            guard
                try Int.fetchOne(
                    db, sql: "SELECT 1 FROM post WHERE id = ? AND app = ?", arguments: [postID, app.rawValue])
                    != nil
            else { throw ContentStoreError.notFound }
            try db.execute(sql: "DELETE FROM post_like WHERE post_id = ? AND user_id = ?", arguments: [postID, userID])
            if db.changesCount > 0 {
                try db.execute(sql: "UPDATE post SET like_count = like_count - 1 WHERE id = ?", arguments: [postID])
            }
            return try Self.likeCount(postID, db) ?? 0
        }
    }

    func likedPostIDs(userID: String, among postIDs: [String]) async throws -> Set<String> {
        guard !postIDs.isEmpty else { return [] }
        return try await database.read { db in
            Set(
                try String.fetchAll(
                    db,
                    sql:
                        "SELECT post_id FROM post_like WHERE user_id = ? AND post_id IN (\(Self.marks(postIDs.count)))",
                    arguments: StatementArguments([userID] + postIDs)))
        }
    }

    func likedPosts(userID: String, app: AppID, after position: ListPosition?, limit: Int) async throws -> [(
        PostRecord, ListPosition
    )] {
        try await database.read { db in
            var sql = """
                SELECT post.*, post_like.liked_at_ms AS liked_at FROM post_like
                JOIN post ON post.id = post_like.post_id
                WHERE post_like.user_id = ? AND post_like.app = ? AND post.hidden_at_ms IS NULL
                """
            var arguments: StatementArguments = [userID, app.rawValue]
            if let position {
                sql += " AND (post_like.liked_at_ms < ? OR (post_like.liked_at_ms = ? AND post_like.post_id < ?))"
                _ = arguments.append(contentsOf: [position.key, position.key, position.id])
            }
            sql += " ORDER BY post_like.liked_at_ms DESC, post_like.post_id DESC LIMIT ?"
            _ = arguments.append(contentsOf: [limit])
            let rows = try Row.fetchAll(db, sql: sql, arguments: arguments)
            let posts = try Self.withPhotos(rows.map(Self.post), db)
            return zip(posts, rows).map { post, row in
                (post, ListPosition(key: row["liked_at"], id: post.id))
            }
        }
    }

    // MARK: Reviews

    func createReview(_ review: ReviewRecord, quota: Quota?) async throws {
        do {
            try await database.write { db in
                if let quota {
                    let today = try Self.count(
                        db, table: "review", column: "customer_id", review.customerID,
                        since: review.createdAtMilliseconds)
                    try quota.check(used: today)
                }
                try db.execute(
                    sql: """
                        INSERT INTO review (id, app, reservation_id, designer_id, customer_id, score, text,
                            created_at_ms)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        review.id, review.app.rawValue, review.reservationID, review.designerID, review.customerID,
                        review.score,
                        review.text, review.createdAtMilliseconds,
                    ])
                try Self.insertPhotos(table: "review_image", owner: "review_id", id: review.id, review.photos, db)
                for (position, keyword) in review.keywords.enumerated() {
                    try db.execute(
                        sql: "INSERT INTO review_keyword (review_id, position, keyword) VALUES (?, ?, ?)",
                        arguments: [review.id, position, keyword])
                }
                // The summary moves with the review, in this transaction.
                try db.execute(
                    sql: """
                        INSERT INTO review_summary (designer_id, review_count, score_total) VALUES (?, 1, ?)
                        ON CONFLICT (designer_id) DO UPDATE SET review_count = review_count + 1,
                            score_total = score_total + excluded.score_total
                        """,
                    arguments: [review.designerID, review.score])
                for keyword in Set(review.keywords) {
                    try db.execute(
                        sql: """
                            INSERT INTO review_keyword_count (designer_id, keyword, count) VALUES (?, ?, 1)
                            ON CONFLICT (designer_id, keyword) DO UPDATE SET count = count + 1
                            """,
                        arguments: [review.designerID, keyword])
                }
            }
        } catch let error as DatabaseError
            where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE
            && error.message?.contains("review.reservation_id") == true
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

    private func reviews(
        column: String, value: String, app: AppID, withHidden: Bool, after position: ListPosition?, limit: Int
    ) async throws -> [ReviewRecord] {
        try await database.read { db in
            var sql =
                "SELECT * FROM review WHERE \(column) = ? AND app = ?" + (withHidden ? "" : " AND hidden_at_ms IS NULL")
            var arguments: StatementArguments = [value, app.rawValue]
            if let position {
                sql += " AND (created_at_ms < ? OR (created_at_ms = ? AND id < ?))"
                _ = arguments.append(contentsOf: [position.key, position.key, position.id])
            }
            sql += " ORDER BY created_at_ms DESC, id DESC LIMIT ?"
            _ = arguments.append(contentsOf: [limit])
            var reviews = try Row.fetchAll(db, sql: sql, arguments: arguments).map(Self.review)
            guard !reviews.isEmpty else { return [] }
            let ids = reviews.map(\.id)
            let photos = try Self.photos(table: "review_image", owner: "review_id", ids: ids, db)
            var keywords: [String: [Int]] = [:]
            for row in try Row.fetchAll(
                db,
                sql:
                    "SELECT review_id, keyword FROM review_keyword WHERE review_id IN (\(Self.marks(ids.count))) ORDER BY review_id, position",
                arguments: StatementArguments(ids))
            {
                keywords[row["review_id"], default: []].append(row["keyword"])
            }
            for index in reviews.indices {
                reviews[index].photos = photos[reviews[index].id] ?? []
                reviews[index].keywords = keywords[reviews[index].id] ?? []
            }
            return reviews
        }
    }

    func reviewSummaries(designerIDs: [String]) async throws -> [ReviewSummaryRecord] {
        guard !designerIDs.isEmpty else { return [] }
        return try await database.read { db in
            let unique = Array(Set(designerIDs))
            var found: [String: ReviewSummaryRecord] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT * FROM review_summary WHERE designer_id IN (\(Self.marks(unique.count)))",
                arguments: StatementArguments(unique))
            {
                let id: String = row["designer_id"]
                found[id] = ReviewSummaryRecord(
                    designerID: id, reviewCount: row["review_count"], scoreTotal: row["score_total"], keywordCounts: [:]
                )
            }
            for row in try Row.fetchAll(
                db, sql: "SELECT * FROM review_keyword_count WHERE designer_id IN (\(Self.marks(unique.count)))",
                arguments: StatementArguments(unique))
            {
                let id: String = row["designer_id"]
                found[id]?.keywordCounts[row["keyword"]] = row["count"]
            }
            return designerIDs.map { found[$0] ?? .empty($0) }
        }
    }

    // MARK: Account deletion

    func purgeUser(_ userID: String, delivery: Delivery?, now: Int64) async throws -> PurgeOutcome {
        try await database.write { db in
            let first = try delivery.map {
                try ReceiptLedger.isFirstDelivery(in: db, $0, nowMilliseconds: now)
            }
            // Their likes, with the counts they added.
            try db.execute(
                sql: """
                    UPDATE post SET like_count = like_count - 1
                    WHERE id IN (SELECT post_id FROM post_like WHERE user_id = ?)
                    """,
                arguments: [userID])
            try db.execute(sql: "DELETE FROM post_like WHERE user_id = ?", arguments: [userID])
            // Their posts (photo lists and others' likes go with them).
            try db.execute(sql: "DELETE FROM post WHERE designer_id = ?", arguments: [userID])
            // Reviews they wrote, and reviews about them (a deleted designer's page is gone); the
            // summaries of the designers they reviewed are recomputed from what remains.
            let reviewed = try String.fetchAll(
                db, sql: "SELECT DISTINCT designer_id FROM review WHERE customer_id = ? AND designer_id != ?",
                arguments: [userID, userID])
            try db.execute(
                sql: "DELETE FROM review WHERE customer_id = ? OR designer_id = ?", arguments: [userID, userID])
            try db.execute(sql: "DELETE FROM review_summary WHERE designer_id = ?", arguments: [userID])
            for designerID in reviewed {
                try Self.recomputeSummary(designerID, db)
            }
            // Housetainer: their events, comments, bookmarks, notifications and blocks.
            try SQLiteCommunityStore.forget(userID, db)
            // Their images that nothing references any more (by the upload rules, all of them).
            let images = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM image WHERE owner_id = ?
                    AND id NOT IN (SELECT image_id FROM post_image) AND id NOT IN (SELECT image_id FROM review_image)
                    """,
                arguments: [userID])
            let imageIDs: [String] = images.map { $0["id"] }
            let blobs = Set(images.map(Self.image).flatMap(\.blobNames))
            if !imageIDs.isEmpty {
                try db.execute(
                    sql: "DELETE FROM image WHERE id IN (\(Self.marks(imageIDs.count)))",
                    arguments: StatementArguments(imageIDs))
            }
            try Self.listForCollection(blobs.filter { try !Self.isReferenced($0, db) }, db)
            return PurgeOutcome(removedImageIDs: imageIDs, firstDelivery: first ?? true)
        }
    }

    func collectUnreferencedBlobs(_ delete: @escaping @Sendable (String) throws -> Void) async throws -> Int {
        try await database.write { db in
            var deleted = 0
            for sha in try String.fetchAll(db, sql: "SELECT sha256 FROM image_blob_garbage") {
                if try !Self.isReferenced(sha, db) {
                    try delete(sha)
                    deleted += 1
                }
                try db.execute(sql: "DELETE FROM image_blob_garbage WHERE sha256 = ?", arguments: [sha])
            }
            return deleted
        }
    }

    // MARK: Blobs

    /// Whether an image row still names `sha` (as its original or as one of its variants).
    static func isReferenced(_ sha: String, _ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db,
            sql: """
                SELECT EXISTS (SELECT 1 FROM image WHERE sha256 = ?)
                    OR EXISTS (SELECT 1 FROM image WHERE large_sha256 = ?)
                    OR EXISTS (SELECT 1 FROM image WHERE thumbnail_sha256 = ?)
                """, arguments: [sha, sha, sha]) ?? false
    }

    /// Lists blobs for `collectUnreferencedBlobs`, which deletes those no image names by then.
    static func listForCollection(_ shas: some Sequence<String>, _ db: Database) throws {
        for sha in shas {
            try db.execute(sql: "INSERT OR IGNORE INTO image_blob_garbage (sha256) VALUES (?)", arguments: [sha])
        }
    }

    // MARK: Rows

    static func recomputeSummary(_ designerID: String, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM review_summary WHERE designer_id = ?", arguments: [designerID])
        try db.execute(
            sql: """
                INSERT INTO review_summary (designer_id, review_count, score_total)
                SELECT designer_id, COUNT(*), SUM(score) FROM review WHERE designer_id = ? AND hidden_at_ms IS NULL
                GROUP BY designer_id
                """,
            arguments: [designerID])
        try db.execute(
            sql: """
                INSERT INTO review_keyword_count (designer_id, keyword, count)
                SELECT review.designer_id, review_keyword.keyword, COUNT(*) FROM review_keyword
                JOIN review ON review.id = review_keyword.review_id
                WHERE review.designer_id = ? AND review.hidden_at_ms IS NULL
                GROUP BY review.designer_id, review_keyword.keyword
                """,
            arguments: [designerID])
    }

    private static func likeCount(_ postID: String, _ db: Database) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT like_count FROM post WHERE id = ?", arguments: [postID])
    }

    private static func insertPhotos(
        table: String, owner: String, id: String, _ photos: [ImageRecord], _ db: Database
    ) throws {
        // In the writing transaction: an image the handler checked may have been collected since.
        let distinct = Array(Set(photos.map(\.id)))
        if !distinct.isEmpty {
            let found =
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM image WHERE id IN (\(databaseQuestionMarks(count: distinct.count)))",
                    arguments: StatementArguments(distinct)) ?? 0
            guard found == distinct.count else { throw ContentStoreError.imageGone }
        }
        for (position, photo) in photos.enumerated() {
            try db.execute(
                sql: "INSERT INTO \(table) (\(owner), position, image_id) VALUES (?, ?, ?)",
                arguments: [id, position, photo.id])
        }
    }

    /// Photos of several posts or reviews in one query, each list in its order.
    private static func photos(table: String, owner: String, ids: [String], _ db: Database) throws -> [String:
        [ImageRecord]]
    {
        var photos: [String: [ImageRecord]] = [:]
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT \(table).\(owner) AS owner_key, image.* FROM \(table) JOIN image ON image.id = \(table).image_id
                WHERE \(table).\(owner) IN (\(marks(ids.count))) ORDER BY \(table).\(owner), \(table).position
                """,
            arguments: StatementArguments(ids))
        {
            photos[row["owner_key"], default: []].append(image(row))
        }
        return photos
    }

    static func withPhotos(_ posts: [PostRecord], _ db: Database) throws -> [PostRecord] {
        guard !posts.isEmpty else { return [] }
        let photos = try photos(table: "post_image", owner: "post_id", ids: posts.map(\.id), db)
        return posts.map { post in
            var post = post
            post.photos = photos[post.id] ?? []
            return post
        }
    }

    static func image(_ row: Row) -> ImageRecord {
        ImageRecord(
            id: row["id"], ownerID: row["owner_id"], app: AppID(rawValue: row["app"]), sha256: row["sha256"],
            contentType: row["content_type"],
            width: row["width"], height: row["height"], byteCount: row["byte_count"],
            createdAtMilliseconds: row["created_at_ms"],
            variants: Self.variants(large: row["large_sha256"], thumbnail: row["thumbnail_sha256"]))
    }

    private static func variants(large: String?, thumbnail: String?) -> ImageVariantNames? {
        guard let large, let thumbnail else { return nil }
        return ImageVariantNames(large: large, thumbnail: thumbnail)
    }

    static func post(_ row: Row) -> PostRecord {
        PostRecord(
            id: row["id"], app: AppID(rawValue: row["app"]), designerID: row["designer_id"], title: row["title"],
            description: row["description"],
            priceKRW: row["price_krw"], category: row["category"], photos: [], likeCount: row["like_count"],
            createdAtMilliseconds: row["created_at_ms"], updatedAtMilliseconds: row["updated_at_ms"],
            hiddenAtMilliseconds: row["hidden_at_ms"], featuredAtMilliseconds: row["featured_at_ms"])
    }

    static func review(_ row: Row) -> ReviewRecord {
        ReviewRecord(
            id: row["id"], app: AppID(rawValue: row["app"]), reservationID: row["reservation_id"],
            designerID: row["designer_id"],
            customerID: row["customer_id"], score: row["score"], text: row["text"], photos: [], keywords: [],
            createdAtMilliseconds: row["created_at_ms"], hiddenAtMilliseconds: row["hidden_at_ms"])
    }

    static func marks(_ count: Int) -> String { ServiceDatabase.placeholders(count) }

    /// A JSON array of strings for `json_each` (ids are plain text; quotes and backslashes escaped).
    static func jsonArray(_ values: [String]) -> String {
        "["
            + values.map { value in
                var escaped = ""
                for scalar in value.unicodeScalars {
                    switch scalar {
                    case "\"": escaped += "\\\""
                    case "\\": escaped += "\\\\"
                    case _ where scalar.value < 0x20: escaped += String(format: "\\u%04x", scalar.value)
                    default: escaped.unicodeScalars.append(scalar)
                    }
                }
                return "\"\(escaped)\""
            }.joined(separator: ",") + "]"
    }
}
