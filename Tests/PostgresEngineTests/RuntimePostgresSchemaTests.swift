import GRDB
import PostgresNIO
import PostgresTestSupport
import XCTest

@testable import ServiceRuntime

/// The runtime's own tables on PostgreSQL: their versions in step with SQLite's, and the receipt ledger
/// applying a delivery once, also when two transactions race for the same key.
final class RuntimePostgresSchemaTests: XCTestCase {
    func testVersionsAreNamedAndOrderedAsOnSQLite() throws {
        var migrator = DatabaseMigrator()
        RuntimeSchema.register(in: &migrator)
        XCTAssertEqual(RuntimePostgresSchema.migrations.map(\.name), migrator.migrations)
    }

    func testAReceiptIsFirstOnceAndUnkeyedDeliveriesAlwaysApply() async throws {
        let database = try await TestDatabase(service: "runtime", migrations: RuntimePostgresSchema.migrations)
        do {
            let keyed = Delivery(key: "account/job-1", method: "yedi.chat.Chat/PurgeUser")
            let first = try await database.postgres.write { tx in
                try await ReceiptLedger.isFirstDelivery(in: tx, keyed, nowMilliseconds: 1)
            }
            let again = try await database.postgres.write { tx in
                try await ReceiptLedger.isFirstDelivery(in: tx, keyed, nowMilliseconds: 2)
            }
            XCTAssertTrue(first)
            XCTAssertFalse(again)
            let unkeyed = Delivery(key: nil, method: "yedi.chat.Chat/PurgeUser")
            for _ in 0..<2 {
                let applies = try await database.postgres.write { tx in
                    try await ReceiptLedger.isFirstDelivery(in: tx, unkeyed, nowMilliseconds: 3)
                }
                XCTAssertTrue(applies)
            }
            // Two transactions with the same key at once: exactly one applies.
            let racing = Delivery(key: "account/job-2", method: "m")
            let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await database.postgres.write { tx in
                            try await ReceiptLedger.isFirstDelivery(in: tx, racing, nowMilliseconds: 4)
                        }
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            XCTAssertEqual(outcomes.filter { $0 }.count, 1)
        } catch {
            try? await database.close()
            throw error
        }
        try await database.close()
    }
}
