import ServiceRuntime

/// Zipadoo's promise tables on PostgreSQL (`booking-3-zipadoo-promises`), SQLite's `PromiseSchema`
/// translated so that BookingService's versions stay in step. `REAL` is `double precision`,
/// `AUTOINCREMENT` an identity column. An identity alone is not commit-ordered: `PostgresPromiseStore`
/// inserts a promise's events under the promise's row lock, which makes `promise_event.position` grow in
/// commit order per promise.
enum PromisePostgresSchema {
    static let promises = PostgresMigration(
        "booking-3-zipadoo-promises",
        [
            """
            CREATE TABLE promise (
                id text PRIMARY KEY NOT NULL,
                creator_id text NOT NULL,
                client_id text NOT NULL,
                title text NOT NULL,
                at_ms bigint NOT NULL,
                place_name text NOT NULL,
                place_address text NOT NULL,
                latitude double precision NOT NULL,
                longitude double precision NOT NULL,
                fee bigint NOT NULL CHECK (fee >= 0),
                created_at_ms bigint NOT NULL,
                settled_at_ms bigint
            )
            """,
            "CREATE UNIQUE INDEX promise_client ON promise (creator_id, client_id)",
            "CREATE INDEX promise_unsettled ON promise (at_ms) WHERE settled_at_ms IS NULL",
            """
            CREATE TABLE promise_participant (
                promise_id text NOT NULL REFERENCES promise (id) ON DELETE CASCADE,
                user_id text NOT NULL,
                position integer NOT NULL,
                latitude double precision,
                longitude double precision,
                fixed_at_ms bigint,
                arrived_at_ms bigint,
                arrival_rank integer,
                result integer NOT NULL DEFAULT 0,
                potatoes bigint NOT NULL DEFAULT 0,
                PRIMARY KEY (promise_id, user_id)
            )
            """,
            """
            CREATE UNIQUE INDEX promise_arrival_rank ON promise_participant (promise_id, arrival_rank)
                WHERE arrival_rank IS NOT NULL
            """,
            "CREATE INDEX promise_participant_user ON promise_participant (user_id)",
            """
            CREATE TABLE potato_entry (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                user_id text,
                promise_id text,
                counterparty_id text,
                amount bigint NOT NULL,
                created_at_ms bigint NOT NULL
            )
            """,
            "CREATE INDEX potato_entry_user ON potato_entry (user_id)",
            "CREATE INDEX potato_entry_counterparty ON potato_entry (counterparty_id)",
            """
            CREATE TABLE promise_event (
                position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                promise_id text NOT NULL REFERENCES promise (id) ON DELETE CASCADE,
                kind integer NOT NULL,
                user_id text,
                latitude double precision,
                longitude double precision,
                at_ms bigint NOT NULL,
                rank integer
            )
            """,
            "CREATE INDEX promise_event_by_promise ON promise_event (promise_id, position)",
            "CREATE INDEX promise_event_user ON promise_event (user_id)",
            """
            CREATE TABLE promise_member_stats (
                user_id text PRIMARY KEY NOT NULL,
                completed integer NOT NULL DEFAULT 0,
                late integer NOT NULL DEFAULT 0
            )
            """,
        ])
}
