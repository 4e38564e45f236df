import PostgresNIO
import ServiceRuntime

/// The same ordered image lists on PostgreSQL. Callers hold the owner's row (its update or lock), so two
/// writers of one list take turns and the second replaces what the first committed.
extension CommunityImageList {
    /// Replaces `owner`'s images with `imageIDs`, in order (positions from 0).
    func set(_ imageIDs: [String], of owner: String, _ tx: PostgresTransaction) async throws {
        try await tx.query("DELETE FROM \(unescaped: table) WHERE \(unescaped: column) = \(owner)")
        guard !imageIDs.isEmpty else { return }
        try await tx.query(
            """
            INSERT INTO \(unescaped: table) (\(unescaped: column), position, image_id)
            SELECT \(owner), image.position - 1, image.id
            FROM unnest(\(imageIDs)::text[]) WITH ORDINALITY AS image(id, position)
            """)
    }

    /// The images of each of `owners`, in order, in one query.
    func images(of owners: [String], _ tx: PostgresTransaction) async throws -> [String: [String]] {
        guard !owners.isEmpty else { return [:] }
        var images: [String: [String]] = [:]
        for row in try await tx.query(
            """
            SELECT \(unescaped: column), image_id FROM \(unescaped: table)
            WHERE \(unescaped: column) = ANY(\(owners)::text[]) ORDER BY \(unescaped: column), position
            """)
        {
            let (owner, image) = try row.decode((String, String).self)
            images[owner, default: []].append(image)
        }
        return images
    }
}
