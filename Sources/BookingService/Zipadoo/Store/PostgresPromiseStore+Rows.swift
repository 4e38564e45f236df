import PostgresNIO
import ServiceRuntime

/// The rows `PostgresPromiseStore`'s methods share, and the promise events' log on PostgreSQL.
extension PostgresPromiseStore {
    static func addParticipant(_ promiseID: String, _ userID: String, position: Int, _ tx: PostgresTransaction)
        async throws
    {
        try await tx.query(
            "INSERT INTO promise_participant (promise_id, user_id, position) VALUES (\(promiseID), \(userID), \(position))"
        )
    }

    static func isParticipant(_ promiseID: String, _ userID: String, _ tx: PostgresTransaction) async throws -> Bool {
        try await !tx.query(
            "SELECT 1 FROM promise_participant WHERE promise_id = \(promiseID) AND user_id = \(userID)"
        ).isEmpty
    }

    /// The promise `userID` takes part in, locked, while it may still change (before T − 30 min).
    static func changeable(_ id: String, by userID: String, now: Int64, _ tx: PostgresTransaction) async throws
        -> PromiseRecord
    {
        guard let promise = try await load(id, tx, locking: true),
            promise.participants.contains(where: { $0.userID == userID })
        else { throw PromiseStoreError.notFound }
        guard now < promise.atMilliseconds - PromiseRules.opensBefore else { throw PromiseStoreError.tooLateToChange }
        return promise
    }

    /// The promise with its participants (the creator first); `locking` takes its row lock for the rest of
    /// the transaction (`FOR UPDATE`), which every change takes before it reads.
    static func load(_ id: String, _ tx: PostgresTransaction, locking: Bool = false) async throws -> PromiseRecord? {
        let query: PostgresQuery =
            locking ? "SELECT * FROM promise WHERE id = \(id) FOR UPDATE" : "SELECT * FROM promise WHERE id = \(id)"
        guard let row = try await tx.query(query).first?.makeRandomAccess() else { return nil }
        var promise = PromiseRecord(
            id: try row["id"].decode(String.self), creatorID: try row["creator_id"].decode(String.self),
            clientID: try row["client_id"].decode(String.self), title: try row["title"].decode(String.self),
            atMilliseconds: try row["at_ms"].decode(Int64.self),
            place: PlaceRecord(
                name: try row["place_name"].decode(String.self), address: try row["place_address"].decode(String.self),
                latitude: try row["latitude"].decode(Double.self), longitude: try row["longitude"].decode(Double.self)),
            fee: try row["fee"].decode(Int.self), createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self),
            settledAtMilliseconds: try row["settled_at_ms"].decode(Int64?.self))
        promise.participants = try await tx.query(
            "SELECT * FROM promise_participant WHERE promise_id = \(id) ORDER BY position"
        ).map { row in
            let row = row.makeRandomAccess()
            return ParticipantRecord(
                userID: try row["user_id"].decode(String.self), latitude: try row["latitude"].decode(Double?.self),
                longitude: try row["longitude"].decode(Double?.self),
                fixedAtMilliseconds: try row["fixed_at_ms"].decode(Int64?.self),
                arrivedAtMilliseconds: try row["arrived_at_ms"].decode(Int64?.self),
                rank: try row["arrival_rank"].decode(Int?.self),
                result: ArrivalOutcome(rawValue: try row["result"].decode(Int.self)) ?? .unsettled,
                potatoes: try row["potatoes"].decode(Int64.self))
        }
        return promise
    }

    /// Appends an event in the caller's transaction (which holds the promise's lock) and hands it to `sink`
    /// once the transaction commits.
    static func record(
        _ kind: PromiseEventRecord.Kind, promiseID: String, userID: String? = nil, latitude: Double? = nil,
        longitude: Double? = nil, at: Int64, rank: Int? = nil, sink: PromiseEventSink?, _ tx: PostgresTransaction
    ) async throws {
        let position = try await tx.query(
            """
            INSERT INTO promise_event (promise_id, kind, user_id, latitude, longitude, at_ms, rank)
            VALUES (\(promiseID), \(kind.rawValue), \(userID), \(latitude), \(longitude), \(at), \(rank))
            RETURNING position
            """
        ).first!.decode(Int64.self)
        let event = PromiseEventRecord(
            position: position, promiseID: promiseID, kind: kind, userID: userID, latitude: latitude,
            longitude: longitude, atMilliseconds: at, rank: rank)
        // Every replica's watchers of the promise are woken (ids only; they read the event).
        try await tx.query(
            "SELECT pg_notify(\(channel), \(PromiseEventHub.wakeUpPayload(promiseID, position: position)))")
        if let sink { tx.afterCommit { sink([event]) } }
    }

    static func event(_ row: PostgresRow) throws -> PromiseEventRecord {
        let row = row.makeRandomAccess()
        return PromiseEventRecord(
            position: try row["position"].decode(Int64.self), promiseID: try row["promise_id"].decode(String.self),
            kind: PromiseEventRecord.Kind(rawValue: try row["kind"].decode(Int.self)) ?? .moved,
            userID: try row["user_id"].decode(String?.self), latitude: try row["latitude"].decode(Double?.self),
            longitude: try row["longitude"].decode(Double?.self), atMilliseconds: try row["at_ms"].decode(Int64.self),
            rank: try row["rank"].decode(Int?.self))
    }
}

/// The promise streams' durable log on PostgreSQL (`PromiseEventLog`'s counterpart). A promise's events
/// are positioned in commit order per promise (each is written under the promise's row lock); every
/// replica's watchers are woken by `NOTIFY promise_events` and read them here (docs/postgres.md).
struct PostgresPromiseEventLog: StreamEventLog {
    let postgres: ServicePostgres

    func events(for key: String, after position: Int64, limit: Int) async throws -> [PromiseEventRecord] {
        try await postgres.read { connection in
            try await connection.query(
                """
                SELECT * FROM promise_event WHERE promise_id = \(key) AND position > \(position)
                ORDER BY position LIMIT \(limit)
                """,
                logger: PostgresPromiseStore.logger
            ).collect().map(PostgresPromiseStore.event)
        }
    }

    /// The identity's last value: every position given out, also of events since removed.
    func highestPosition(for promiseID: String) async throws -> Int64 {
        try await postgres.read { connection in
            try await connection.query(
                """
                SELECT COALESCE(pg_sequence_last_value(pg_get_serial_sequence('promise_event', 'position')::regclass), 0)
                """,
                logger: PostgresPromiseStore.logger
            ).collect().first?.decode(Int64.self) ?? 0
        }
    }

    func prunedThrough(_ key: String) async throws -> Int64 { 0 }

    /// A (re)subscription's read in one statement: the counter, then the events after `position`. The
    /// statement's snapshot is taken before the counter is read, so no event it shows is above the head.
    func eventsWatermarkAndHead(for key: String, after position: Int64, limit: Int) async throws -> (
        events: [PromiseEventRecord], prunedThrough: Int64, highestPosition: Int64
    ) {
        try await postgres.read { connection in
            let rows = try await connection.query(
                """
                SELECT counter.head, e.* FROM (
                    SELECT COALESCE(
                        pg_sequence_last_value(pg_get_serial_sequence('promise_event', 'position')::regclass), 0
                    ) AS head
                ) AS counter
                LEFT JOIN LATERAL (
                    SELECT * FROM promise_event WHERE promise_id = \(key) AND position > \(position)
                    ORDER BY position LIMIT \(limit)
                ) AS e ON true
                ORDER BY e.position
                """,
                logger: PostgresPromiseStore.logger
            ).collect()
            let head = try rows.first?.makeRandomAccess()["head"].decode(Int64.self) ?? 0
            let events = try rows.filter { try $0.makeRandomAccess()["position"].decode(Int64?.self) != nil }
                .map(PostgresPromiseStore.event)
            return (events, 0, head)
        }
    }
}
