import GRDB
import PostgresNIO
import PostgresTestSupport
import XCTest

@testable import AccountService
@testable import ServiceRuntime

/// AccountSchema's versions on PostgreSQL: in step with SQLite's, and a database migrated part of the
/// way keeps its rows through the rest.
final class AccountPostgresSchemaTests: XCTestCase {
    func testVersionsAreNamedAndOrderedAsOnSQLite() {
        var migrator = DatabaseMigrator()
        AccountSchema.migrate(&migrator)
        XCTAssertEqual(
            AccountPostgresSchema.migrations.map(\.name), migrator.migrations.filter { $0.hasPrefix("account-") })
        XCTAssertEqual(AccountPostgresSchema.migrations.count, 8)
    }

    /// The service's whole list (the runtime's, the accounts', then moderation's, SLP's, Housetainer's and
    /// Zipadoo's) in the order the GRDB migrator runs their SQLite siblings.
    func testTheServicesVersionsAreNamedAndOrderedAsOnSQLite() {
        var migrator = DatabaseMigrator()
        RuntimeSchema.register(in: &migrator)
        AccountServiceDefinition.migrate(&migrator)
        XCTAssertEqual(AccountServiceDefinition.postgresMigrations?.map(\.name), migrator.migrations)
    }

    /// An account written at `account-4-pending-sign-ups` (before apps: address required and unique
    /// overall) reads back after the later versions, which let the same address into another app.
    func testAnAccountWrittenBeforeAppsSurvivesTheLaterVersions() async throws {
        let upToSignUps = RuntimePostgresSchema.migrations + AccountPostgresSchema.migrations.prefix(4)
        let database = try await TestDatabase(service: "account", migrations: Array(upToSignUps))
        do {
            try await database.postgres.write { tx in
                try await tx.query(
                    """
                    INSERT INTO app_user (id, role, email, name, phone, gender, password_hash, created_at_ms)
                    VALUES ('u1', 'customer', 'u1@example.com', '이름', '01012345678', 1, '$scrypt$test', 1)
                    """)
            }
            try await PostgresMigrator.migrate(
                database.postgres, service: "account",
                migrations: RuntimePostgresSchema.migrations + AccountPostgresSchema.migrations)
            let store = try await PostgresAccountStoreTests.store(on: database.postgres, replica: "a")
            let old = try await store.user(id: "u1")
            XCTAssertEqual(old?.app, .yedi)
            XCTAssertEqual(old?.email, "u1@example.com")
            XCTAssertNil(old?.nickname)
            var elsewhere = AccountStoreContract.user("z1", email: "u1@example.com", role: "member")
            elsewhere.app = "zipadoo"
            try await store.createUser(
                elsewhere, designer: nil, session: AccountStoreContract.session("s1", user: "z1"))
            let both = try await store.users(ids: ["u1", "z1"])
            XCTAssertEqual(both.count, 2)
        } catch {
            try? await database.close()
            throw error
        }
        try await database.close()
    }
}
