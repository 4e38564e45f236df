import PostgresNIO
import RPCAccess
import ServiceRuntime

/// Photo lists, locks and the rows the PostgreSQL store reads back as records.
extension PostgresContentStore {
    /// An ordered photo table: `post_image` by `post_id` or `review_image` by `review_id`.
    struct PhotoList {
        let table: String
        let owner: String

        static let posts = PhotoList(table: "post_image", owner: "post_id")
        static let reviews = PhotoList(table: "review_image", owner: "review_id")
    }

    /// Holds the transaction-level advisory lock `name` until the transaction ends: what serializes a
    /// count and the change it decides, where no row exists to lock.
    static func lock(_ name: String, _ tx: PostgresTransaction) async throws {
        try await tx.query("SELECT pg_advisory_xact_lock(hashtextextended(\(name), 0))")
    }

    /// The one number a `SELECT count(*) …` answers.
    static func count(_ query: PostgresQuery, _ tx: PostgresTransaction) async throws -> Int64 {
        try await tx.query(query).first?.decode(Int64.self) ?? 0
    }

    /// Writes the photo list. Its images are held `FOR KEY SHARE` from the check to the commit: one that
    /// collection deleted since the handler checked it is `imageGone`, and none is deleted after the check.
    static func insertPhotos(_ list: PhotoList, id: String, _ photos: [ImageRecord], _ tx: PostgresTransaction)
        async throws
    {
        guard !photos.isEmpty else { return }
        let distinct = Array(Set(photos.map(\.id))).sorted()
        let found = try await tx.query("SELECT id FROM image WHERE id = ANY(\(distinct)) ORDER BY id FOR KEY SHARE")
        guard found.count == distinct.count else { throw ContentStoreError.imageGone }
        try await tx.query(
            """
            INSERT INTO \(unescaped: list.table) (\(unescaped: list.owner), position, image_id)
            SELECT \(id), ordinality - 1, image_id FROM unnest(\(photos.map(\.id))::text[])
                WITH ORDINALITY AS given(image_id, ordinality)
            """)
    }

    static func image(_ found: PostgresRow) throws -> ImageRecord {
        try image(found.makeRandomAccess(), prefix: "")
    }

    /// An image from the columns named `prefix` + its column names (`photo_id`, … beside a post's own).
    static func image(_ row: PostgresRandomAccessRow, prefix: String) throws -> ImageRecord {
        let large = try row[prefix + "large_sha256"].decode(String?.self)
        let thumbnail = try row[prefix + "thumbnail_sha256"].decode(String?.self)
        return ImageRecord(
            id: try row[prefix + "id"].decode(String.self), ownerID: try row[prefix + "owner_id"].decode(String.self),
            app: AppID(rawValue: try row[prefix + "app"].decode(String.self)),
            sha256: try row[prefix + "sha256"].decode(String.self),
            contentType: try row[prefix + "content_type"].decode(String.self),
            width: try row[prefix + "width"].decode(Int.self), height: try row[prefix + "height"].decode(Int.self),
            byteCount: try row[prefix + "byte_count"].decode(Int.self),
            createdAtMilliseconds: try row[prefix + "created_at_ms"].decode(Int64.self),
            variants: large.flatMap { large in
                thumbnail.map { ImageVariantNames(large: large, thumbnail: $0) }
            })
    }

    /// What follows `WITH page AS (…)` in a read of posts or reviews with their photos: each row of the
    /// page once per photo (once with NULL photo columns when it has none), in the page's order, then the
    /// photos'. `order` is the page's ORDER BY over `page`'s columns, ending in its id.
    static func withPhotosTail(_ list: PhotoList, order: String) -> String {
        """
        SELECT page.*, i.id AS photo_id, i.owner_id AS photo_owner_id, i.app AS photo_app,
            i.sha256 AS photo_sha256, i.content_type AS photo_content_type, i.width AS photo_width,
            i.height AS photo_height, i.byte_count AS photo_byte_count, i.created_at_ms AS photo_created_at_ms,
            i.large_sha256 AS photo_large_sha256, i.thumbnail_sha256 AS photo_thumbnail_sha256
        FROM page LEFT JOIN (\(list.table) l JOIN image i ON i.id = l.image_id) ON l.\(list.owner) = page.id
        ORDER BY \(order), l.position
        """
    }

    static func postsWithPhotosTail(order: String) -> String { withPhotosTail(.posts, order: order) }

    /// Runs a read of rows with their photos (`withPhotosTail`) as one statement, outside any transaction:
    /// one snapshot and one round trip, where a snapshot transaction around a rows read and a photos read
    /// took four. `make` reads a record from its first row, `id` names it, `addPhoto` gives it each photo.
    static func withPhotos<Record: Sendable>(
        _ query: PostgresQuery, _ postgres: ServicePostgres, make: @escaping @Sendable (PostgresRow) throws -> Record,
        id: @escaping @Sendable (Record) -> String, addPhoto: @escaping @Sendable (inout Record, ImageRecord) -> Void
    ) async throws -> [Record] {
        try await postgres.read { connection in
            var records: [Record] = []
            for found in try await connection.query(query, logger: Self.logger).collect() {
                let row = found.makeRandomAccess()
                if records.last.map(id) != (try row["id"].decode(String.self)) { records.append(try make(found)) }
                if try row["photo_id"].decode(String?.self) != nil {
                    addPhoto(&records[records.count - 1], try image(row, prefix: "photo_"))
                }
            }
            return records
        }
    }

    /// `withPhotos` for posts.
    static func postsWithPhotos(_ query: PostgresQuery, _ postgres: ServicePostgres) async throws -> [PostRecord] {
        try await withPhotos(query, postgres, make: post, id: \.id, addPhoto: { $0.photos.append($1) })
    }

    /// `withPhotos` for posts read with one more column each (`column`, a bigint: a like's time, a score).
    static func postsWithPhotos(_ query: PostgresQuery, _ postgres: ServicePostgres, and column: String)
        async throws -> [(post: PostRecord, value: Int64)]
    {
        try await withPhotos(
            query, postgres, make: { (try post($0), try $0.makeRandomAccess()[column].decode(Int64.self)) },
            id: \.post.id, addPhoto: { $0.post.photos.append($1) })
    }

    static func post(_ found: PostgresRow) throws -> PostRecord {
        let row = found.makeRandomAccess()
        return PostRecord(
            id: try row["id"].decode(String.self), app: AppID(rawValue: try row["app"].decode(String.self)),
            designerID: try row["designer_id"].decode(String.self), title: try row["title"].decode(String.self),
            description: try row["description"].decode(String.self), priceKRW: try row["price_krw"].decode(Int64.self),
            category: try row["category"].decode(Int.self), photos: [],
            likeCount: try row["like_count"].decode(Int64.self),
            createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self),
            updatedAtMilliseconds: try row["updated_at_ms"].decode(Int64.self),
            hiddenAtMilliseconds: try row["hidden_at_ms"].decode(Int64?.self),
            featuredAtMilliseconds: try row["featured_at_ms"].decode(Int64?.self))
    }

    static func review(_ found: PostgresRow) throws -> ReviewRecord {
        let row = found.makeRandomAccess()
        return ReviewRecord(
            id: try row["id"].decode(String.self), app: AppID(rawValue: try row["app"].decode(String.self)),
            reservationID: try row["reservation_id"].decode(String.self),
            designerID: try row["designer_id"].decode(String.self),
            customerID: try row["customer_id"].decode(String.self), score: try row["score"].decode(Int.self),
            text: try row["text"].decode(String.self), photos: [], keywords: [],
            createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self),
            hiddenAtMilliseconds: try row["hidden_at_ms"].decode(Int64?.self))
    }
}
