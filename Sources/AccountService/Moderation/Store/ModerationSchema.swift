import GRDB

/// The moderation tables, in AccountService's database beside the members they name (a suspension and
/// its revocation commit with the member's row).
enum ModerationSchema {
    static func migrate(_ migrator: inout DatabaseMigrator) {
        // Issue 26, moderation. A report counts once per (app, reporter, reportee), by a unique index; a
        // member's cases go with their account; the operator log stays (it records what was done).
        migrator.registerMigration("account-8-moderation") { db in
            try db.execute(
                sql: """
                    CREATE TABLE moderation_case (
                        id TEXT PRIMARY KEY,
                        app TEXT NOT NULL,
                        kind TEXT NOT NULL CHECK (kind IN ('report', 'inquiry')),
                        writer_id TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        reportee_id TEXT REFERENCES user(id) ON DELETE CASCADE,
                        reasons TEXT NOT NULL,
                        title TEXT NOT NULL,
                        content TEXT NOT NULL,
                        answer TEXT,
                        answered_by TEXT,
                        answered_at_ms INTEGER,
                        created_at_ms INTEGER NOT NULL,
                        CHECK ((kind = 'report') = (reportee_id IS NOT NULL))
                    );
                    CREATE UNIQUE INDEX moderation_case_one_report
                        ON moderation_case(app, writer_id, reportee_id) WHERE kind = 'report';
                    CREATE INDEX moderation_case_by_reportee ON moderation_case(reportee_id) WHERE kind = 'report';
                    CREATE INDEX moderation_case_queue ON moderation_case(app, created_at_ms DESC, id DESC);
                    CREATE INDEX moderation_case_by_writer
                        ON moderation_case(writer_id, created_at_ms DESC, id DESC);
                    CREATE TABLE operator_action (
                        id TEXT PRIMARY KEY,
                        app TEXT NOT NULL,
                        operator_id TEXT NOT NULL,
                        action TEXT NOT NULL,
                        subject TEXT NOT NULL,
                        detail TEXT NOT NULL,
                        at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX operator_action_log ON operator_action(app, at_ms DESC, id DESC);
                    ALTER TABLE user ADD COLUMN suspended_until_ms INTEGER;
                    """)
        }
    }
}
