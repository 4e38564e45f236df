import GRDB
import ServiceRuntime

/// One event of a promise's live stream (`promise_event`), written in the transaction of the change it
/// describes and handed to the hub after the commit.
struct PromiseEventRecord: PositionedEvent, Hashable {
    enum Kind: Int, Sendable {
        case moved = 1
        case arrived = 2
        case trackingEnded = 3
    }

    var position: Int64
    var promiseID: String
    var kind: Kind
    var userID: String?
    var latitude: Double?
    var longitude: Double?
    var atMilliseconds: Int64
    var rank: Int?

    var streamKey: String { promiseID }
}

extension PromiseEventRecord {
    /// A wake-up for the promise's watchers on PostgreSQL, where the hub carries no bodies
    /// (`ResumableStream.liveFromLog`): only its key and position are read; it is never sent.
    static func wakeUp(_ promiseID: String, position: Int64) -> PromiseEventRecord {
        PromiseEventRecord(position: position, promiseID: promiseID, kind: .moved, atMilliseconds: 0)
    }
}

typealias PromiseEventSink = @Sendable ([PromiseEventRecord]) -> Void

/// The process's hub of promise streams: a promise's participants' devices (at most 21 participants).
typealias PromiseEventHub = StreamHub<PromiseEventRecord>

extension SQLitePromiseStore {
    /// Appends an event in `db`'s transaction and hands it to `sink` once the transaction commits.
    static func record(
        _ kind: PromiseEventRecord.Kind, promiseID: String, userID: String? = nil, latitude: Double? = nil,
        longitude: Double? = nil, at: Int64, rank: Int? = nil, sink: PromiseEventSink?, _ db: Database
    ) throws {
        try db.execute(
            sql: """
                INSERT INTO promise_event (promise_id, kind, user_id, latitude, longitude, at_ms, rank)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [promiseID, kind.rawValue, userID, latitude, longitude, at, rank])
        let event = PromiseEventRecord(
            position: db.lastInsertedRowID, promiseID: promiseID, kind: kind, userID: userID, latitude: latitude,
            longitude: longitude, atMilliseconds: at, rank: rank)
        if let sink { db.afterNextTransaction(onCommit: { _ in sink([event]) }) }
    }

    static func event(_ row: Row) -> PromiseEventRecord {
        PromiseEventRecord(
            position: row["position"], promiseID: row["promise_id"],
            kind: PromiseEventRecord.Kind(rawValue: row["kind"]) ?? .moved, userID: row["user_id"],
            latitude: row["latitude"], longitude: row["longitude"], atMilliseconds: row["at_ms"], rank: row["rank"])
    }

    /// What a watch starts from: every participant's latest fix and the promise's highest event position,
    /// read together (participants, from T − 30 min; `outsideWindow` before).
    func snapshot(promiseID: String, userID: String, now: Int64) async throws -> ([ParticipantRecord], Int64) {
        try await database.read { db in
            guard let promise = try Self.load(promiseID, db),
                promise.participants.contains(where: { $0.userID == userID })
            else { throw PromiseStoreError.notFound }
            guard now >= promise.atMilliseconds - PromiseRules.opensBefore else {
                throw PromiseStoreError.outsideWindow
            }
            let position =
                try Int64.fetchOne(
                    db, sql: "SELECT MAX(position) FROM promise_event WHERE promise_id = ?", arguments: [promiseID])
                ?? 0
            return (promise.participants, position)
        }
    }
}

/// The promise streams' durable log over `promise_event`. Nothing is pruned while a promise tracks; at
/// settlement its fixes go and one tracking-ended event stays, which is all a resuming watcher needs then.
struct PromiseEventLog: StreamEventLog {
    let database: ServiceDatabase

    func events(for key: String, after position: Int64, limit: Int) async throws -> [PromiseEventRecord] {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM promise_event WHERE promise_id = ? AND position > ? ORDER BY position LIMIT ?",
                arguments: [key, position, limit]
            ).map(SQLitePromiseStore.event)
        }
    }

    func highestPosition(for promiseID: String) async throws -> Int64 {
        try await database.read { db in
            try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'promise_event'") ?? 0
        }
    }

    func prunedThrough(_ key: String) async throws -> Int64 { 0 }
}
