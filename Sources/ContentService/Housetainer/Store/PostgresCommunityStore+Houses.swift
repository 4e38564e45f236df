import PostgresNIO
import RPCAccess
import ServiceRuntime

/// Open houses and the home screen's picks.
extension PostgresCommunityStore {
    func createHouse(_ house: HouseRecord) async throws -> HouseRecord {
        try await postgres.write { tx in
            if let existing = try await Self.house(clientID: house.clientID, of: house, tx) { return existing }
            // The same creation retried on another replica at once waits for this commit, then inserts
            // nothing and answers the house stored there.
            guard
                try await !tx.query(
                    """
                    INSERT INTO housetainer_house (id, app, owner_id, creator_id, client_id, name, title, content,
                        category, cover_index, domestic, location, detailed_location, displayed, created_at_ms,
                        updated_at_ms)
                    VALUES (\(house.id), \(house.app.rawValue), \(house.fields.ownerID), \(house.creatorID),
                        \(house.clientID), \(house.fields.name), \(house.fields.title), \(house.fields.content),
                        \(house.fields.category), \(house.fields.coverIndex), \(house.fields.domestic),
                        \(house.fields.location), \(house.fields.detailedLocation), false,
                        \(house.createdAtMilliseconds), \(house.updatedAtMilliseconds))
                    ON CONFLICT ON CONSTRAINT housetainer_house_client DO NOTHING
                    RETURNING 1
                    """
                ).isEmpty
            else {
                guard let existing = try await Self.house(clientID: house.clientID, of: house, tx) else {
                    throw CommunityStoreError.notFound
                }
                return existing
            }
            try await CommunityImageList.houses.set(house.fields.imageIDs, of: house.id, tx)
            var stored = house
            stored.displayed = false
            return stored
        }
    }

    /// The update locks the house's row first, so two updates of one house replace its images in turn.
    func updateHouse(id: String, _ fields: HouseFieldsRecord, app: AppID, now: Int64) async throws {
        try await postgres.write { tx in
            guard
                try await !tx.query(
                    """
                    UPDATE housetainer_house SET owner_id = \(fields.ownerID), name = \(fields.name),
                        title = \(fields.title), content = \(fields.content), category = \(fields.category),
                        cover_index = \(fields.coverIndex), domestic = \(fields.domestic), location = \(fields.location),
                        detailed_location = \(fields.detailedLocation), updated_at_ms = \(now)
                    WHERE id = \(id) AND app = \(app.rawValue)
                    RETURNING 1
                    """
                ).isEmpty
            else { throw CommunityStoreError.notFound }
            try await CommunityImageList.houses.set(fields.imageIDs, of: id, tx)
        }
    }

    func setHouseDisplay(houseID: String, displayed: Bool, app: AppID, now: Int64) async throws {
        try await postgres.write { tx in
            guard
                try await !tx.query(
                    """
                    UPDATE housetainer_house SET displayed = \(displayed) WHERE id = \(houseID) AND app = \(app.rawValue)
                    RETURNING 1
                    """
                ).isEmpty
            else { throw CommunityStoreError.notFound }
        }
    }

    func house(id: String, reader: CommunityReader) async throws -> HouseRecord? {
        try await postgres.snapshot { tx in try await Self.house(id, reader: reader, tx) }
    }

    func houses(
        category: Int?, ownerID: String?, reader: CommunityReader, after: PagePosition<Int64>?, limit: Int
    ) async throws -> [HouseRecord] {
        try await postgres.snapshot { tx in
            try await Self.houses(
                """
                SELECT \(unescaped: Self.houseColumns) FROM \(reader: reader) CROSS JOIN housetainer_house h
                WHERE \(unescaped: Self.visibleHouse)
                    AND (\(category)::bigint IS NULL OR h.category = \(category))
                    AND (\(ownerID)::text IS NULL OR h.owner_id = \(ownerID))
                    AND (\(after?.key)::bigint IS NULL OR (h.created_at_ms, h.id) < (\(after?.key), \(after?.id)))
                ORDER BY h.created_at_ms DESC, h.id DESC LIMIT \(limit)
                """, tx)
        }
    }

    /// Under the app's advisory lock (the picks may have no row yet to lock): two admins replacing the
    /// picks at once replace them one after the other, the second deleting what the first inserted,
    /// rather than meeting on the primary key.
    func setPicks(moments: [String], events: [String], houses: [String], app: AppID) async throws {
        try await postgres.write { tx in
            try await tx.query(
                "SELECT pg_advisory_xact_lock(hashtextextended(\("yedi.content.housetainer-picks/" + app.rawValue), 0))"
            )
            for (table, ids) in [("housetainer_event", moments + events), ("housetainer_house", houses)] {
                let found =
                    try await tx.query(
                        """
                        SELECT count(*) FROM \(unescaped: table) WHERE app = \(app.rawValue) AND id = ANY(\(ids)::text[])
                        """
                    ).first?.decode(Int.self) ?? 0
                guard found == Set(ids).count else { throw CommunityStoreError.notFound }
            }
            try await tx.query("DELETE FROM housetainer_pick WHERE app = \(app.rawValue)")
            for (kind, ids) in [("moment", moments), ("event", events), ("house", houses)] where !ids.isEmpty {
                try await tx.query(
                    """
                    INSERT INTO housetainer_pick (app, kind, position, target_id)
                    SELECT \(app.rawValue), \(kind), pick.position - 1, pick.id
                    FROM unnest(\(ids)::text[]) WITH ORDINALITY AS pick(id, position)
                    """)
            }
        }
    }

    /// Picks are of displayed items only, whoever reads (an admin's home is everyone's); an item picked
    /// twice shows once, at its first place.
    func home(reader: CommunityReader) async throws -> HomeRecord {
        let shown = CommunityReader(id: reader.id, app: reader.app, isAdmin: false)
        return try await postgres.snapshot { tx in
            func picked(_ kind: String) async throws -> [EventRecord] {
                try await Self.events(
                    """
                    SELECT \(unescaped: Self.eventColumns) FROM \(reader: shown) CROSS JOIN housetainer_event e
                    WHERE \(unescaped: Self.visible) AND e.displayed
                        AND e.id IN (SELECT target_id FROM housetainer_pick WHERE app = r.app AND kind = \(kind))
                    ORDER BY (SELECT min(p.position) FROM housetainer_pick p
                        WHERE p.app = r.app AND p.kind = \(kind) AND p.target_id = e.id)
                    """, tx)
            }
            return HomeRecord(
                moments: try await picked("moment"), events: try await picked("event"),
                houses: try await Self.houses(
                    """
                    SELECT \(unescaped: Self.houseColumns) FROM \(reader: shown) CROSS JOIN housetainer_house h
                    WHERE \(unescaped: Self.visibleHouse) AND h.displayed
                        AND h.id IN (SELECT target_id FROM housetainer_pick WHERE app = r.app AND kind = 'house')
                    ORDER BY (SELECT min(p.position) FROM housetainer_pick p
                        WHERE p.app = r.app AND p.kind = 'house' AND p.target_id = h.id)
                    """, tx))
        }
    }

    /// The admin's house with the client id `clientID` (in `house`'s app), as an admin sees it.
    private static func house(clientID: String, of house: HouseRecord, _ tx: PostgresTransaction) async throws
        -> HouseRecord?
    {
        try await houses(
            """
            SELECT \(unescaped: houseColumns)
            FROM \(reader: CommunityReader(id: "", app: house.app, isAdmin: true)) CROSS JOIN housetainer_house h
            WHERE \(unescaped: visibleHouse) AND h.creator_id = \(house.creatorID) AND h.client_id = \(clientID)
            """, tx
        ).first
    }
}
