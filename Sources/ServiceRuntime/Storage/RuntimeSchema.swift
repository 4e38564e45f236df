import GRDB

/// The tables every service's database has, whatever the service: the outbox (jobs to deliver to peers),
/// the receipt ledger (requests from peers already applied), the revoked users (`RevokedUsers`) and the
/// scheduled jobs (`Scheduler`).
enum RuntimeSchema {
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("runtime-1-outbox-and-receipts") { db in
            try db.create(table: "runtime_outbox") { table in
                // Also the idempotency key the receiver sees, so a redelivery is recognised.
                table.primaryKey("id", .text)
                table.column("peer", .text).notNull()
                table.column("method", .text).notNull()
                table.column("payload", .blob).notNull()
                table.column("created_at_ms", .integer).notNull()
                table.column("attempts", .integer).notNull().defaults(to: 0)
                table.column("last_error", .text)
            }
            try db.create(table: "runtime_receipt") { table in
                // "<calling service>/<its job id>"
                table.primaryKey("key", .text)
                table.column("method", .text).notNull()
                table.column("applied_at_ms", .integer).notNull()
            }
        }
        migrator.registerMigration("runtime-2-revoked-users") { db in
            try db.create(table: "runtime_revoked_user") { table in
                // The SHA-256 of the user id (`RevokedUsers.digest`), not the id: a deleted user's id must
                // not stay in any data file.
                table.primaryKey("user_digest", .text)
                // Tokens issued at or before it are refused.
                table.column("revoked_at_ms", .integer).notNull()
                // After the last such token expired: the row may go.
                table.column("keep_until_ms", .integer).notNull()
            }
        }
        migrator.registerMigration("runtime-3-scheduled-jobs") { db in
            try db.create(table: "runtime_scheduled_job") { table in
                table.primaryKey("id", .text)
                table.column("kind", .text).notNull()
                table.column("subject", .text)
                table.column("payload", .blob).notNull()
                // Wall-clock milliseconds on the service's clock.
                table.column("due_at_ms", .integer).notNull()
                table.column("attempts", .integer).notNull().defaults(to: 0)
                table.column("last_error", .text)
            }
            // The worker's claim takes the soonest due job; cancelling by subject finds a subject's jobs.
            try db.create(
                index: "runtime_scheduled_job_due", on: "runtime_scheduled_job", columns: ["due_at_ms", "id"])
            try db.create(index: "runtime_scheduled_job_subject", on: "runtime_scheduled_job", columns: ["subject"])
        }
    }
}
