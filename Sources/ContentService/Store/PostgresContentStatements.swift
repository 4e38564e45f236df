import PostgresNIO
import ServiceRuntime

/// ContentService's statements prepared once per connection (`HotStatement`): the image row every
/// `GetImage` reads, a cache hit included (replicas revalidate each hit against the database).
enum ContentStatements {
    /// The images with ids in $1: every column `PostgresContentStore.image` reads, named.
    enum ImagesByID: HotStatement {
        static let parameters: [PostgresDataType] = [.textArray]
        static let sql = """
            SELECT id, owner_id, app, sha256, content_type, width, height, byte_count, created_at_ms,
                large_sha256, thumbnail_sha256
            FROM image WHERE id = ANY($1::text[])
            """
    }
}
