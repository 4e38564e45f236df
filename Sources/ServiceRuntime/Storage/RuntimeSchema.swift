import GRDB

/// The tables every service's database has, whatever the service: the outbox (jobs to deliver to peers)
/// and the receipt ledger (requests from peers already applied).
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
    }
}
