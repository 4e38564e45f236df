import Logging
import NIOCore
import PostgresNIO
import ServiceRuntime

/// Image bytes as rows of the shared database (`image_blob`, `ContentPostgresSchema.imageBlobs`), so an
/// image uploaded through one replica is read through any other. Originals and variants share the table:
/// names are content addresses, and collection deletes a name only when no image names it either way.
///
/// Deletion is the collection's: `PostgresContentStore.collectUnreferencedBlobs` deletes the row in the
/// transaction that found it unreferenced, under the blob's lock, so `delete` here has nothing left to do.
struct PostgresImageBlobStore: ImageBlobStore {
    static let logger = Logger(label: "yedi.content.postgres.blobs")

    let postgres: ServicePostgres

    func write(_ bytes: [UInt8], sha256: String) async throws -> Bool {
        let name = try ImageBlobName.checked(sha256)
        let data = ByteBuffer(bytes: bytes)
        return try await postgres.write { tx in
            try await !tx.query(
                "INSERT INTO image_blob (sha256, bytes) VALUES (\(name), \(data)) ON CONFLICT DO NOTHING RETURNING 1"
            ).isEmpty
        }
    }

    func read(sha256: String) async throws -> [UInt8]? {
        let name = try ImageBlobName.checked(sha256)
        return try await postgres.read { connection in
            let rows = try await connection.query(
                "SELECT bytes FROM image_blob WHERE sha256 = \(name)", logger: Self.logger
            ).collect()
            return try rows.first.map { Array(try $0.decode(ByteBuffer.self).readableBytesView) }
        }
    }

    func exists(sha256: String) async throws -> Bool {
        guard let name = try? ImageBlobName.checked(sha256) else { return false }
        return try await postgres.read { connection in
            try await !connection.query(
                "SELECT 1 FROM image_blob WHERE sha256 = \(name)", logger: Self.logger
            ).collect().isEmpty
        }
    }

    func delete(sha256: String) throws {
        _ = try ImageBlobName.checked(sha256)
    }

    func names() async throws -> [String] {
        try await postgres.read { connection in
            try await connection.query("SELECT sha256 FROM image_blob ORDER BY sha256", logger: Self.logger)
                .collect().map { try $0.decode(String.self) }
        }
    }
}
