import Foundation
import GRDB
import RPCCore
import ServiceLifecycle
import ServiceRuntime
import YediProto

/// A service named "account" (it presents the account certificate) with one table, driven by
/// environment variables:
/// - `YEDI_TESTBED_WRITE_BURST=N`: writes rows 1…N, one transaction each, printing `ack <i>` after each
///   commit returned; then idles until stopped.
/// - `YEDI_TESTBED_ENQUEUE=N`: on a first start, commits one row and N outbox jobs (PurgeUser of users
///   `u-1`…`u-N` to the content peer) in one transaction.
enum TestbedDefinition: ServiceDefinition {
    static let defaults = ServiceDefaults(name: "account", port: 0, metricsPort: 0, peers: [])
    static let summary = "Runtime testbed (tests only)."

    static func migrate(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("testbed-1") { db in
            try db.create(table: "testbed_row") { table in
                table.primaryKey("id", .integer)
                table.column("payload", .text).notNull()
            }
        }
    }

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        let variables = ProcessInfo.processInfo.environment
        if let jobs = Int(variables["YEDI_TESTBED_ENQUEUE"] ?? "") {
            try await env.database.write { db in
                guard try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM testbed_row") == 0 else { return }
                try db.execute(sql: "INSERT INTO testbed_row (id, payload) VALUES (0, 'account deleted')")
                for index in 1...max(1, jobs) {
                    try env.outbox.enqueue(
                        in: db, peer: "content", method: YediContent.ContentService.Method.purgeUser,
                        request: YediCommon.PurgeUserRequest(userID: "u-\(index)"))
                }
            }
        }
        if let rows = Int(variables["YEDI_TESTBED_WRITE_BURST"] ?? "") {
            env.addBackgroundService(WriteBurst(rows: rows, database: env.database))
        }
        return []
    }
}

/// Writes rows one transaction at a time and says which committed.
struct WriteBurst: Service {
    let rows: Int
    let database: ServiceDatabase

    func run() async throws {
        for index in 1...rows {
            try await database.write { db in
                try db.execute(
                    sql: "INSERT INTO testbed_row (id, payload) VALUES (?, ?)",
                    arguments: [index, String(repeating: "x", count: 100)])
            }
            // Unbuffered: the test reads each line before it kills this process.
            FileHandle.standardOutput.write(Data("ack \(index)\n".utf8))
        }
        try await gracefulShutdown()
    }
}
