import GRDB

/// The ordered images of an event or a house: one table of (owner, position, image id) each, written
/// and read the same way.
struct CommunityImageList: Sendable {
    /// `housetainer_event_image` or `housetainer_house_image`.
    let table: String
    /// The owner's column: `event_id` or `house_id`.
    let column: String

    static let events = CommunityImageList(table: "housetainer_event_image", column: "event_id")
    static let houses = CommunityImageList(table: "housetainer_house_image", column: "house_id")

    /// Replaces `owner`'s images with `imageIDs`, in order. These rows are what keeps an image from
    /// unreferenced-image collection: those it drops become collectable unless something else uses them.
    func set(_ imageIDs: [String], of owner: String, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM \(table) WHERE \(column) = ?", arguments: [owner])
        for (position, imageID) in imageIDs.enumerated() {
            try db.execute(
                sql: "INSERT INTO \(table) (\(column), position, image_id) VALUES (?, ?, ?)",
                arguments: [owner, position, imageID])
        }
    }

    /// The images of each of `owners`, in order, in one query.
    func images(of owners: [String], _ db: Database) throws -> [String: [String]] {
        guard !owners.isEmpty else { return [:] }
        var images: [String: [String]] = [:]
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT \(column) AS owner, image_id FROM \(table)
                WHERE \(column) IN (\(owners.map { _ in "?" }.joined(separator: ", "))) ORDER BY \(column), position
                """,
            arguments: StatementArguments(owners))
        {
            images[row["owner"], default: []].append(row["image_id"])
        }
        return images
    }
}
