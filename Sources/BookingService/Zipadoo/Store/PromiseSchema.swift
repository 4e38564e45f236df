import GRDB

/// Zipadoo's promises in BookingService's database (docs/zipadoo.md). Promises have tables of their own
/// rather than `reservation.kind`: a promise has no designer, styles, price or slot cells. Positions,
/// arrivals, settlement and each user's counters and potato ledger live here, so a settlement is one
/// transaction and no balance moves between services.
enum PromiseSchema {
    static func migrate(_ migrator: inout DatabaseMigrator) {
        // Issue 30. One participant row per (promise, user), the creator included, keeping the latest fix
        // and the arrival; the arrival rank is unique per promise by index (the last word on two fixes
        // arriving at once). The ledger's entries come in pairs (one move, −x and +x), so all of them sum to
        // 0; a deleted member's entries become one anonymous write-off (user_id NULL). `promise_event` is
        // the live stream's log (WatchPromise): fixes and arrivals while tracking, erased at settlement,
        // which leaves one tracking-ended event.
        migrator.registerMigration("booking-3-zipadoo-promises") { db in
            try db.execute(
                sql: """
                    CREATE TABLE promise (
                        id TEXT PRIMARY KEY NOT NULL,
                        creator_id TEXT NOT NULL,
                        client_id TEXT NOT NULL,
                        title TEXT NOT NULL,
                        at_ms INTEGER NOT NULL,
                        place_name TEXT NOT NULL,
                        place_address TEXT NOT NULL,
                        latitude REAL NOT NULL,
                        longitude REAL NOT NULL,
                        fee INTEGER NOT NULL CHECK (fee >= 0),
                        created_at_ms INTEGER NOT NULL,
                        settled_at_ms INTEGER
                    );
                    CREATE UNIQUE INDEX promise_client ON promise(creator_id, client_id);
                    CREATE INDEX promise_unsettled ON promise(at_ms) WHERE settled_at_ms IS NULL;
                    CREATE TABLE promise_participant (
                        promise_id TEXT NOT NULL REFERENCES promise(id) ON DELETE CASCADE,
                        user_id TEXT NOT NULL,
                        position INTEGER NOT NULL,
                        latitude REAL,
                        longitude REAL,
                        fixed_at_ms INTEGER,
                        arrived_at_ms INTEGER,
                        arrival_rank INTEGER,
                        result INTEGER NOT NULL DEFAULT 0,
                        potatoes INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (promise_id, user_id)
                    ) WITHOUT ROWID;
                    CREATE UNIQUE INDEX promise_arrival_rank ON promise_participant(promise_id, arrival_rank)
                        WHERE arrival_rank IS NOT NULL;
                    CREATE INDEX promise_participant_user ON promise_participant(user_id);
                    CREATE TABLE potato_entry (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        user_id TEXT,
                        promise_id TEXT,
                        counterparty_id TEXT,
                        amount INTEGER NOT NULL,
                        created_at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX potato_entry_user ON potato_entry(user_id);
                    CREATE INDEX potato_entry_counterparty ON potato_entry(counterparty_id);
                    CREATE TABLE promise_event (
                        position INTEGER PRIMARY KEY AUTOINCREMENT,
                        promise_id TEXT NOT NULL REFERENCES promise(id) ON DELETE CASCADE,
                        kind INTEGER NOT NULL,
                        user_id TEXT,
                        latitude REAL,
                        longitude REAL,
                        at_ms INTEGER NOT NULL,
                        rank INTEGER
                    );
                    CREATE INDEX promise_event_by_promise ON promise_event(promise_id, position);
                    CREATE INDEX promise_event_user ON promise_event(user_id);
                    CREATE TABLE promise_member_stats (
                        user_id TEXT PRIMARY KEY NOT NULL,
                        completed INTEGER NOT NULL DEFAULT 0,
                        late INTEGER NOT NULL DEFAULT 0
                    ) WITHOUT ROWID;
                    """)
        }
    }
}
