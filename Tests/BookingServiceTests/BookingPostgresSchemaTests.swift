import GRDB
import XCTest

@testable import BookingService
@testable import ServiceRuntime

/// BookingService's PostgreSQL versions move in step with SQLite's: the same names in the same order,
/// the runtime's first.
final class BookingPostgresSchemaTests: XCTestCase {
    func testVersionsAreNamedAndOrderedAsOnSQLite() {
        var migrator = DatabaseMigrator()
        RuntimeSchema.register(in: &migrator)
        BookingServiceDefinition.migrate(&migrator)
        XCTAssertEqual(BookingPostgresSchema.migrations.map(\.name), migrator.migrations)
    }
}
