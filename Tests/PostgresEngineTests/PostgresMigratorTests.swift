import Foundation
import PostgresNIO
import PostgresTestSupport
import XCTest

@testable import ServiceRuntime

/// `PostgresMigrator` against a real PostgreSQL: from empty and from an earlier version, once however many
/// replicas start at once, a failing version leaving nothing, and a refusal naming both versions when the
/// database knows a version the binary does not.
final class PostgresMigratorTests: XCTestCase {
    private var database: TestDatabase!

    override func setUp() async throws {
        database = try await TestDatabase(timeout: .seconds(5))
    }

    override func tearDown() async throws {
        try await database?.close()
        database = nil
    }

    /// Each version fails if run twice (no IF NOT EXISTS), so a second run shows up.
    private let versions = [
        PostgresMigration(
            "things", ["CREATE TABLE thing (id bigint PRIMARY KEY)", "INSERT INTO thing VALUES (1)"]),
        PostgresMigration(
            "thingNames", ["ALTER TABLE thing ADD COLUMN name text", "INSERT INTO thing VALUES (2, 'b')"]),
        PostgresMigration("thingIndex", ["CREATE INDEX thing_name ON thing (name)"]),
    ]

    private func recorded(_ postgres: ServicePostgres? = nil) async throws -> [String] {
        try await (postgres ?? database.postgres).snapshot { tx in try await PostgresMigrator.applied(tx) }
    }

    private func thingCount() async throws -> Int {
        try await database.postgres.read { connection in
            let rows = try await connection.query("SELECT count(*) FROM thing", logger: TestPostgres.logger).collect()
            return try rows[0].decode(Int.self)
        }
    }

    func testFromEmptyThenAgainChangesNothing() async throws {
        try await PostgresMigrator.migrate(database.postgres, service: "test", migrations: versions)
        let names = try await recorded()
        XCTAssertEqual(names, ["things", "thingNames", "thingIndex"])
        let count = try await thingCount()
        XCTAssertEqual(count, 2)
        try await PostgresMigrator.migrate(database.postgres, service: "test", migrations: versions)
        let again = try await thingCount()
        XCTAssertEqual(again, 2, "a second start re-ran a version")
    }

    func testFromEveryEarlierVersion() async throws {
        for known in 0...versions.count {
            let database = try await TestDatabase()
            do {
                try await PostgresMigrator.migrate(
                    database.postgres, service: "test", migrations: Array(versions.prefix(known)))
                try await PostgresMigrator.migrate(database.postgres, service: "test", migrations: versions)
                let names = try await recorded(database.postgres)
                XCTAssertEqual(names, versions.map(\.name), "from version \(known)")
            } catch {
                try await database.close()
                throw error
            }
            try await database.close()
        }
    }

    /// Three replicas (three pools) started at once on an empty database: each version runs once.
    func testThreeReplicasAtOnceMigrateOnce() async throws {
        let settings = database.settings
        let replicas = try (0..<3).map { _ in
            try ServicePostgres(settings: settings, logger: TestPostgres.logger)
        }
        let runners = replicas.map { replica in Task { await replica.run() } }
        defer {
            for runner in runners { runner.cancel() }
        }
        let versions = versions
        try await withThrowingTaskGroup(of: Void.self) { group in
            for replica in replicas {
                group.addTask { try await PostgresMigrator.migrate(replica, service: "test", migrations: versions) }
            }
            try await group.waitForAll()
        }
        let names = try await recorded()
        XCTAssertEqual(names, versions.map(\.name))
        let count = try await thingCount()
        XCTAssertEqual(count, 2, "a version ran more than once")
    }

    func testAFailingVersionLeavesNothingAndNamesItself() async throws {
        let broken = [
            versions[0],
            PostgresMigration("broken", ["CREATE TABLE half (id int)", "ALTER TABLE nowhere ADD COLUMN x int"]),
        ]
        await assertStartupError(
            try await PostgresMigrator.migrate(database.postgres, service: "test", migrations: broken)
        ) {
            XCTAssertTrue($0.hasPrefix("migration \"broken\" of test failed: relation \"nowhere\" does not exist"), $0)
        }
        let names = try await recorded()
        XCTAssertEqual(names, ["things"])
        let half = try await database.postgres.read { connection in
            try await connection.query("SELECT to_regclass('half') IS NULL", logger: TestPostgres.logger).collect()[0]
                .decode(Bool.self)
        }
        XCTAssertTrue(half, "the failed version's first statement stayed")
    }

    /// An older binary against a newer schema refuses to start, naming both versions.
    func testAnUnknownVersionRefusesTheStartNamingBothVersions() async throws {
        try await PostgresMigrator.migrate(database.postgres, service: "test", migrations: versions)
        await assertStartupError(
            try await PostgresMigrator.migrate(
                database.postgres, service: "test", migrations: Array(versions.prefix(1)))
        ) {
            XCTAssertTrue($0.contains("the schema of test is at version \"thingIndex\" (3)"), $0)
            XCTAssertTrue($0.contains("its newest is \"things\" (1)"), $0)
        }
        await assertStartupError(
            try await PostgresMigrator.migrate(database.postgres, service: "test", migrations: [])
        ) {
            XCTAssertTrue($0.contains("\"thingIndex\" (3)"), $0)
            XCTAssertTrue($0.contains("its newest is none"), $0)
        }
        var other = versions
        other[1].name = "otherBranch"
        await assertStartupError(
            try await PostgresMigrator.migrate(database.postgres, service: "test", migrations: other)
        ) {
            XCTAssertTrue(
                $0.contains("has version \"thingNames\" at 2, where this binary has \"otherBranch\""), $0)
        }
    }

    func testADuplicateNameIsRefused() async throws {
        await assertStartupError(
            try await PostgresMigrator.migrate(
                database.postgres, service: "test", migrations: [versions[0], versions[0]])
        ) {
            XCTAssertEqual($0, "migration \"things\" of test is listed twice or has no name")
        }
    }
}
