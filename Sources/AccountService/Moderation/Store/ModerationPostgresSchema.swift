import ServiceRuntime

/// ModerationSchema's version on PostgreSQL: the same name, registered after `account-9-password-resets`
/// and before SLP's versions, as `AccountServiceDefinition` registers the SQLite one.
///
/// Differences from SQLite, each for the other engine: the users table is `app_user`; integers are
/// `bigint`. `moderation_case_one_report` is the `ON CONFLICT` target that counts a report once per
/// (app, reporter, reportee) whichever replica stores it.
enum ModerationPostgresSchema {
    static let migrations: [PostgresMigration] = [moderation]

    /// Issue 26, moderation. A member's cases go with their account; the operator log stays (it records
    /// what was done).
    static let moderation = PostgresMigration(
        "account-8-moderation",
        [
            """
            CREATE TABLE moderation_case (
                id text PRIMARY KEY,
                app text NOT NULL,
                kind text NOT NULL CHECK (kind IN ('report', 'inquiry')),
                writer_id text NOT NULL REFERENCES app_user(id) ON DELETE CASCADE,
                reportee_id text REFERENCES app_user(id) ON DELETE CASCADE,
                reasons text NOT NULL,
                title text NOT NULL,
                content text NOT NULL,
                answer text,
                answered_by text,
                answered_at_ms bigint,
                created_at_ms bigint NOT NULL,
                CHECK ((kind = 'report') = (reportee_id IS NOT NULL))
            )
            """,
            """
            CREATE UNIQUE INDEX moderation_case_one_report
                ON moderation_case (app, writer_id, reportee_id) WHERE kind = 'report'
            """,
            "CREATE INDEX moderation_case_by_reportee ON moderation_case (reportee_id) WHERE kind = 'report'",
            "CREATE INDEX moderation_case_queue ON moderation_case (app, created_at_ms DESC, id DESC)",
            "CREATE INDEX moderation_case_by_writer ON moderation_case (writer_id, created_at_ms DESC, id DESC)",
            """
            CREATE TABLE operator_action (
                id text PRIMARY KEY,
                app text NOT NULL,
                operator_id text NOT NULL,
                action text NOT NULL,
                subject text NOT NULL,
                detail text NOT NULL,
                at_ms bigint NOT NULL
            )
            """,
            "CREATE INDEX operator_action_log ON operator_action (app, at_ms DESC, id DESC)",
            "ALTER TABLE app_user ADD COLUMN suspended_until_ms bigint",
        ])
}
