/// The runtime's own tables on PostgreSQL, in step with `RuntimeSchema` (same version names, same
/// order): every service's migration list starts with these. Differences from SQLite, each for
/// replicas: the outbox keeps its insertion order in `seq` (no `rowid`), and each job carries its lease
/// and its next due time on PostgreSQL's clock (`clock_timestamp()`), so every replica's worker honours
/// them (docs/postgres.md, "Outbox across replicas").
public enum RuntimePostgresSchema {
    public static let migrations: [PostgresMigration] = [
        PostgresMigration(
            "runtime-1-outbox-and-receipts",
            [
                """
                CREATE TABLE runtime_outbox (
                    id text PRIMARY KEY,
                    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
                    peer text NOT NULL,
                    method text NOT NULL,
                    payload bytea NOT NULL,
                    created_at_ms bigint NOT NULL,
                    attempts integer NOT NULL DEFAULT 0,
                    last_error text,
                    due_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                    leased_until timestamptz,
                    leased_by text
                )
                """,
                "CREATE INDEX runtime_outbox_due ON runtime_outbox (due_at, seq)",
                """
                CREATE TABLE runtime_receipt (
                    key text PRIMARY KEY,
                    method text NOT NULL,
                    applied_at_ms bigint NOT NULL
                )
                """,
            ]),
        PostgresMigration(
            "runtime-2-revoked-users",
            [
                """
                CREATE TABLE runtime_revoked_user (
                    user_digest text PRIMARY KEY,
                    revoked_at_ms bigint NOT NULL,
                    keep_until_ms bigint NOT NULL
                )
                """
            ]),
        PostgresMigration(
            "runtime-3-scheduled-jobs",
            [
                """
                CREATE TABLE runtime_scheduled_job (
                    id text PRIMARY KEY,
                    kind text NOT NULL,
                    subject text,
                    payload bytea NOT NULL,
                    due_at_ms bigint NOT NULL,
                    attempts integer NOT NULL DEFAULT 0,
                    last_error text,
                    leased_until timestamptz,
                    leased_by text
                )
                """,
                "CREATE INDEX runtime_scheduled_job_due ON runtime_scheduled_job (due_at_ms, id)",
                "CREATE INDEX runtime_scheduled_job_subject ON runtime_scheduled_job (subject)",
            ]),
    ]
}
