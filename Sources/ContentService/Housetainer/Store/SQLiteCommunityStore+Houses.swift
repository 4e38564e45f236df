import GRDB
import RPCAccess
import ServiceRuntime

/// Open houses and the home screen's picks.
extension SQLiteCommunityStore {
    /// What `reader` may see of a house `h`: as for events (`visible`).
    static let visibleHouse = """
        h.app = :app AND (h.displayed = 1 OR h.owner_id = :me OR :admin)
        AND NOT EXISTS (SELECT 1 FROM housetainer_block b WHERE b.blocker_id = :me AND b.blocked_id = h.owner_id)
        """

    func createHouse(_ house: HouseRecord) async throws -> HouseRecord {
        try await database.write { db in
            if let id = try String.fetchOne(
                db, sql: "SELECT id FROM housetainer_house WHERE app = ? AND creator_id = ? AND client_id = ?",
                arguments: [house.app.rawValue, house.creatorID, house.clientID]),
                let existing = try Self.house(id, reader: CommunityReader(id: "", app: house.app, isAdmin: true), db)
            {
                return existing
            }
            try db.execute(
                sql: """
                    INSERT INTO housetainer_house (id, app, owner_id, creator_id, client_id, name, title, content,
                        category, cover_index, domestic, location, detailed_location, displayed, created_at_ms,
                        updated_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)
                    """,
                arguments: [
                    house.id, house.app.rawValue, house.fields.ownerID, house.creatorID, house.clientID,
                    house.fields.name, house.fields.title, house.fields.content, house.fields.category,
                    house.fields.coverIndex, house.fields.domestic, house.fields.location,
                    house.fields.detailedLocation, house.createdAtMilliseconds, house.updatedAtMilliseconds,
                ])
            try CommunityImageList.houses.set(house.fields.imageIDs, of: house.id, db)
            var stored = house
            stored.displayed = false
            return stored
        }
    }

    func updateHouse(id: String, _ fields: HouseFieldsRecord, app: AppID, now: Int64) async throws {
        try await database.write { db in
            try db.execute(
                sql: """
                    UPDATE housetainer_house SET owner_id = ?, name = ?, title = ?, content = ?, category = ?,
                        cover_index = ?, domestic = ?, location = ?, detailed_location = ?, updated_at_ms = ?
                    WHERE id = ? AND app = ?
                    """,
                arguments: [
                    fields.ownerID, fields.name, fields.title, fields.content, fields.category, fields.coverIndex,
                    fields.domestic, fields.location, fields.detailedLocation, now, id, app.rawValue,
                ])
            guard db.changesCount == 1 else { throw CommunityStoreError.notFound }
            try CommunityImageList.houses.set(fields.imageIDs, of: id, db)
        }
    }

    func setHouseDisplay(houseID: String, displayed: Bool, app: AppID, now: Int64) async throws {
        try await database.write { db in
            try db.execute(
                sql: "UPDATE housetainer_house SET displayed = ? WHERE id = ? AND app = ?",
                arguments: [displayed, houseID, app.rawValue])
            guard db.changesCount == 1 else { throw CommunityStoreError.notFound }
        }
    }

    func house(id: String, reader: CommunityReader) async throws -> HouseRecord? {
        try await database.read { db in try Self.house(id, reader: reader, db) }
    }

    func houses(
        category: Int?, ownerID: String?, reader: CommunityReader, after: PagePosition<Int64>?, limit: Int
    ) async throws -> [HouseRecord] {
        try await database.read { db in
            try Self.houses(
                where: """
                    (:category IS NULL OR h.category = :category) AND (:owner IS NULL OR h.owner_id = :owner)
                    AND (:afterAt IS NULL OR (h.created_at_ms, h.id) < (:afterAt, :afterID))
                    """,
                order: "h.created_at_ms DESC, h.id DESC LIMIT :limit", reader: reader,
                [
                    "category": category, "owner": ownerID, "afterAt": after?.key, "afterID": after?.id,
                    "limit": limit,
                ], db)
        }
    }

    func setPicks(moments: [String], events: [String], houses: [String], app: AppID) async throws {
        try await database.write { db in
            for id in moments + events {
                guard
                    try Bool.fetchOne(
                        db, sql: "SELECT 1 FROM housetainer_event WHERE id = ? AND app = ?",
                        arguments: [id, app.rawValue]) == true
                else { throw CommunityStoreError.notFound }
            }
            for id in houses {
                guard
                    try Bool.fetchOne(
                        db, sql: "SELECT 1 FROM housetainer_house WHERE id = ? AND app = ?",
                        arguments: [id, app.rawValue]) == true
                else { throw CommunityStoreError.notFound }
            }
            try db.execute(sql: "DELETE FROM housetainer_pick WHERE app = ?", arguments: [app.rawValue])
            for (kind, ids) in [("moment", moments), ("event", events), ("house", houses)] {
                for (position, id) in ids.enumerated() {
                    try db.execute(
                        sql: "INSERT INTO housetainer_pick (app, kind, position, target_id) VALUES (?, ?, ?, ?)",
                        arguments: [app.rawValue, kind, position, id])
                }
            }
        }
    }

    func home(reader: CommunityReader) async throws -> HomeRecord {
        try await database.read { db in
            // Picks are of displayed items only, whoever reads (an admin's home is everyone's).
            let shown = CommunityReader(id: reader.id, app: reader.app, isAdmin: false)
            func picked(_ kind: String) -> String {
                "e.displayed = 1 AND e.id IN (SELECT target_id FROM housetainer_pick WHERE app = :app AND kind = '\(kind)')"
            }
            let order = { (kind: String) in
                "(SELECT position FROM housetainer_pick p WHERE p.app = :app AND p.kind = '\(kind)' AND p.target_id = e.id)"
            }
            return HomeRecord(
                moments: try Self.events(where: picked("moment"), order: order("moment"), reader: shown, [:], db),
                events: try Self.events(where: picked("event"), order: order("event"), reader: shown, [:], db),
                houses: try Self.houses(
                    where: """
                        h.displayed = 1
                        AND h.id IN (SELECT target_id FROM housetainer_pick WHERE app = :app AND kind = 'house')
                        """,
                    order: """
                        (SELECT position FROM housetainer_pick p WHERE p.app = :app AND p.kind = 'house'
                            AND p.target_id = h.id)
                        """,
                    reader: shown, [:], db))
        }
    }

    // MARK: Reading houses

    static func house(_ id: String, reader: CommunityReader, _ db: Database) throws -> HouseRecord? {
        try houses(where: "h.id = :id", order: "h.id", reader: reader, ["id": id], db).first
    }

    static func houses(
        where condition: String, order: String, reader: CommunityReader,
        _ more: [String: (any DatabaseValueConvertible)?], _ db: Database
    ) throws -> [HouseRecord] {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT h.*, (SELECT count(*) FROM housetainer_comment c WHERE c.house_id = h.id) AS comment_count
                FROM housetainer_house h
                WHERE \(visibleHouse) AND \(condition) ORDER BY \(order)
                """,
            arguments: arguments(reader, more))
        let images = try CommunityImageList.houses.images(of: rows.map { $0["id"] }, db)
        return rows.map { row in
            HouseRecord(
                id: row["id"], app: AppID(rawValue: row["app"]), ownerID: row["owner_id"], creatorID: row["creator_id"],
                clientID: row["client_id"],
                fields: HouseFieldsRecord(
                    ownerID: row["owner_id"], name: row["name"], title: row["title"], content: row["content"],
                    category: row["category"], imageIDs: images[row["id"]] ?? [], coverIndex: row["cover_index"],
                    domestic: row["domestic"], location: row["location"], detailedLocation: row["detailed_location"]),
                displayed: row["displayed"], createdAtMilliseconds: row["created_at_ms"],
                updatedAtMilliseconds: row["updated_at_ms"], commentCount: row["comment_count"])
        }
    }
}
