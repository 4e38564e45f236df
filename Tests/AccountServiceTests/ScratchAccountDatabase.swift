import Foundation
import Logging
import ServiceRuntime
import XCTest

@testable import AccountService

/// A scratch AccountService database of a test's own (every migration applied, removed after the test)
/// with an account store on it: what the SQLite contract classes run on.
struct ScratchAccountDatabase {
    let database: ServiceDatabase
    /// Jobs written to the database's outbox; nothing delivers them.
    let events: AccountEvents
    let accounts: SQLiteAccountStore

    init(for test: XCTestCase, name: String) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("yedi-\(name)-\(UUID().uuidString)").path
        let database = try ServiceDatabase.open(
            directory: directory, name: "account", migrations: AccountServiceDefinition.migrate,
            logger: Logger(label: "test"))
        let clock = ManualClock()
        self.database = database
        events = AccountEvents(outbox: Outbox(ids: SequentialIDGenerator(prefix: "job"), clock: clock))
        accounts = SQLiteAccountStore(
            database: database, events: events, revokedUsers: try await RevokedUsers(database: database, clock: clock))
        test.addTeardownBlock {
            try? database.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// Another store on the same database, as another replica makes it: its own job ids and revocations.
    func replica(_ name: String) async throws -> SQLiteAccountStore {
        let clock = ManualClock()
        return SQLiteAccountStore(
            database: database,
            events: AccountEvents(outbox: Outbox(ids: SequentialIDGenerator(prefix: "job-\(name)-"), clock: clock)),
            revokedUsers: try await RevokedUsers(database: database, clock: clock))
    }
}
