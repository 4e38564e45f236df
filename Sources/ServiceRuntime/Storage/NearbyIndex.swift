import GRDB

/// "Who or what is within R metres of P", for a store that keeps points: an SQLite R*Tree of the points
/// (the index narrows to a box), then the exact haversine distance, ordered by distance, one page at a
/// time.
///
/// The store owns its rows and says which integer id each point has (R*Tree keys are integers: a
/// store's `rowid`); it writes and removes points in its own transactions, so a point is indexed
/// exactly while its row exists. Location is personal data: a store removes a point as soon as the
/// feature no longer needs it, and with the account.
public struct NearbyIndex: Sendable {
    /// The R*Tree's table name (`<name>` is a store's, e.g. `slp_position`).
    public let table: String

    public init(_ name: String) {
        precondition(name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }, "NearbyIndex: a plain SQL name")
        table = "\(name)_rtree"
    }

    /// The index's table, in a store's migration.
    public func create(in db: Database) throws {
        try db.execute(
            // The box columns are 32-bit floats (the index); `+lat`/`+lng` keep the exact point.
            sql: "CREATE VIRTUAL TABLE \(table) USING rtree(id, min_lat, max_lat, min_lng, max_lng, +lat, +lng)")
    }

    /// Puts `id` at `point` (replacing where it was).
    public func set(_ id: Int64, at point: GeoPoint, in db: Database) throws {
        try db.execute(
            sql: """
                INSERT OR REPLACE INTO \(table) (id, min_lat, max_lat, min_lng, max_lng, lat, lng)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                id, point.latitude, point.latitude, point.longitude, point.longitude, point.latitude, point.longitude,
            ])
    }

    public func remove(_ id: Int64, in db: Database) throws {
        try db.execute(sql: "DELETE FROM \(table) WHERE id = ?", arguments: [id])
    }

    /// One hit: a point's id and its distance from the centre, in metres.
    public struct Hit: Sendable, Hashable {
        public var id: Int64
        public var metres: Double
    }

    /// Where a page ends: the last hit's distance and id (distance, then id, is the order).
    public struct Position: Sendable, Hashable {
        public var metres: Double
        public var id: Int64

        public init(metres: Double, id: Int64) {
            self.metres = metres
            self.id = id
        }
    }

    /// The points within `radius` metres of `centre`, nearest first (ties by id), after `position`, at
    /// most `limit`; `accept` filters candidates (a store's own rules: not the caller, not blocked), so a
    /// page is full whenever enough points qualify.
    ///
    /// R*Tree's box columns are 32-bit floats: the box is widened by 1e-4° (about 10 m) so that no point
    /// on its edge is lost to rounding; the exact distance, from the exact columns, decides.
    public func within(
        _ radius: Double, of centre: GeoPoint, after position: Position? = nil, limit: Int, in db: Database,
        accept: (Int64) throws -> Bool = { _ in true }
    ) throws -> [Hit] {
        var hits: [Hit] = []
        for box in GeoBox.covering(centre, radius: radius) {
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT id, lat, lng FROM \(table)
                    WHERE max_lat >= ? AND min_lat <= ? AND max_lng >= ? AND min_lng <= ?
                    """,
                arguments: [
                    box.minLatitude - 1e-4, box.maxLatitude + 1e-4, box.minLongitude - 1e-4, box.maxLongitude + 1e-4,
                ])
            while let row = try rows.next() {
                guard let point = GeoPoint(latitude: row["lat"], longitude: row["lng"]) else { continue }
                let hit = Hit(id: row["id"], metres: centre.distance(to: point))
                guard hit.metres <= radius else { continue }
                if let position, (hit.metres, hit.id) <= (position.metres, position.id) { continue }
                hits.append(hit)
            }
        }
        hits.sort { ($0.metres, $0.id) < ($1.metres, $1.id) }
        var page: [Hit] = []
        var seen = Set<Int64>()
        for hit in hits where page.count < limit && seen.insert(hit.id).inserted {
            if try accept(hit.id) { page.append(hit) }
        }
        return page
    }

    /// `within` in one query per box, joined with the store's rows: `columns` (of the joined tables) and
    /// `joins` onto the index, aliased `nearby` (`JOIN slp_queue q ON q.id = nearby.id`), so a search reads
    /// each candidate's card with its point instead of one query per candidate. `accept` sees the row.
    /// The page: nearest first (ties by id), at most `limit`, each with its row (whose first three columns are the index's id, latitude and longitude).
    public func within(
        _ radius: Double, of centre: GeoPoint, limit: Int, columns: String, joins: String, in db: Database,
        accept: (Int64, Row) throws -> Bool = { _, _ in true }
    ) throws -> [(hit: Hit, row: Row)] {
        var candidates: [(hit: Hit, row: Row)] = []
        let statement = try db.cachedStatement(
            sql: """
                SELECT nearby.id AS nearby_id, nearby.lat AS nearby_lat, nearby.lng AS nearby_lng, \(columns)
                FROM \(table) nearby \(joins)
                WHERE nearby.max_lat >= ? AND nearby.min_lat <= ? AND nearby.max_lng >= ? AND nearby.min_lng <= ?
                """)
        for box in GeoBox.covering(centre, radius: radius) {
            let rows = try Row.fetchCursor(
                statement,
                arguments: [
                    box.minLatitude - 1e-4, box.maxLatitude + 1e-4, box.minLongitude - 1e-4, box.maxLongitude + 1e-4,
                ])
            while let row = try rows.next() {
                // By position (id, lat, lng first): a lookup by name costs more than the value.
                guard let point = GeoPoint(latitude: row[1], longitude: row[2]) else { continue }
                let metres = centre.distance(to: point)
                guard metres <= radius else { continue }
                candidates.append((Hit(id: row[0], metres: metres), row.copy()))
            }
        }
        candidates.sort { ($0.hit.metres, $0.hit.id) < ($1.hit.metres, $1.hit.id) }
        var page: [(hit: Hit, row: Row)] = []
        var seen = Set<Int64>()
        for candidate in candidates where page.count < limit && seen.insert(candidate.hit.id).inserted {
            if try accept(candidate.hit.id, candidate.row) { page.append(candidate) }
        }
        return page
    }
}
