import Foundation
import GRDB
import Logging
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest

@testable import RuntimeTestbed

/// A service process writing through its environment's database is killed with SIGKILL mid-burst:
/// every write it acknowledged is there after a restart, and SQLite finds the file intact.
final class DurabilityTests: XCTestCase {
    func testEveryAcknowledgedWriteSurvivesSIGKILL() async throws {
        let harness = try ServiceHarness()
        let dataDirectory = harness.dataRoot.appendingPathComponent("burst").path
        let process = try RunningProcess(
            "/usr/bin/env",
            [
                "YEDI_TESTBED_WRITE_BURST=1000000", try BuiltProducts.path("RuntimeTestbed"),
                "--pki", harness.pki.devPKI.path, "--data", dataDirectory, "--port", "0", "--metrics-port", "0",
                "--log-level", "warning",
            ]
        )
        let enough = process.waitForOutput(timeout: 60) { Self.acknowledged($0) >= 400 }
        process.send(SIGKILL)
        let result = process.finish(timeout: 10)
        XCTAssertTrue(enough, "the writer did not get going: \(result.errorOutput)")
        let acknowledged = Self.acknowledged(result.output)
        XCTAssertGreaterThanOrEqual(acknowledged, 400)
        XCTAssertLessThan(acknowledged, 1_000_000, "the process finished before it was killed")

        // Restart: open the database through the runtime again (as the service would after a crash).
        let database = try ServiceDatabase.open(
            directory: dataDirectory, name: "account", migrations: TestbedDefinition.migrate,
            logger: Logger(label: "test"))
        let (count, maximum) = try await database.read { db in
            (
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM testbed_row") ?? 0,
                try Int.fetchOne(db, sql: "SELECT MAX(id) FROM testbed_row") ?? 0
            )
        }
        XCTAssertGreaterThanOrEqual(maximum, acknowledged, "an acknowledged write is missing")
        XCTAssertEqual(count, maximum, "rows are missing below the last one")
        let integrity = try await database.integrityCheck()
        XCTAssertEqual(integrity, "ok")
        let synchronous = try await database.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        XCTAssertEqual(synchronous, 2, "synchronous = FULL")
        let journal = try await database.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        XCTAssertEqual(journal, "wal")
        let foreignKeys = try await database.read { db in try Int.fetchOne(db, sql: "PRAGMA foreign_keys") }
        XCTAssertEqual(foreignKeys, 1)
        try database.close()
    }

    /// The highest `ack N` line printed (lines arrive in order; the last may be cut by the kill).
    private static func acknowledged(_ output: String) -> Int {
        output.split(separator: "\n").compactMap { line in
            line.hasPrefix("ack ") ? Int(line.dropFirst(4)) : nil
        }.max() ?? 0
    }
}
