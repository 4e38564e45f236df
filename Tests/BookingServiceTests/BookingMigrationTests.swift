import Foundation
import GRDB
import Logging
import RPCAccess
import ServiceRuntime
import XCTest

@testable import BookingService

/// `booking-3-apps` on a database filled before apps existed: schedules, menus and reservations are
/// YeDi's, and a store of another app sees none of them.
final class BookingMigrationTests: XCTestCase {
    func testTenantABookingDatabaseFromBeforeAppsKeepsEveryRowInYeDi() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("yedi-booking-migration-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let old = try DatabaseQueue(
                path: URL(fileURLWithPath: directory).appendingPathComponent("booking.sqlite").path)
            var migrator = DatabaseMigrator()
            BookingServiceDefinition.migrate(&migrator)
            try migrator.migrate(old, upTo: "booking-2")
            try await old.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO schedule (designer_id, opening_minute, closing_minute, slot_minutes, time_zone,
                            breaks, closed_weekdays, updated_at_ms)
                        VALUES ('d1', 540, 1260, 60, 'Asia/Seoul', '[]', '7', 1);
                        INSERT INTO style (id, designer_id, position, name, category, price_krw, duration_minutes)
                        VALUES ('s1', 'd1', 0, '컷', 1, 45000, 60);
                        INSERT INTO reservation (id, customer_id, designer_id, start_at_ms, end_at_ms, time_zone,
                            styles, total_price_krw, status, created_at_ms)
                        VALUES ('r1', 'c1', 'd1', 3600000, 7200000, 'Asia/Seoul', '[]', 45000, 'confirmed', 5);
                        """)
            }
            try old.close()
        }
        let database = try ServiceDatabase.open(
            directory: directory, name: "booking", migrations: BookingServiceDefinition.migrate,
            logger: Logger(label: "test"))
        defer { try? database.close() }
        let yedi = SQLiteBookingStore(database: database, app: .yedi)
        let other = SQLiteBookingStore(database: database, app: "zipadoo")

        let schedule = try await yedi.schedule(designerID: "d1")
        XCTAssertEqual(schedule?.slotMinutes, 60)
        let menu = try await yedi.menu(designerID: "d1")
        XCTAssertEqual(menu.map(\.id), ["s1"])
        let reservation = try await yedi.reservation(id: "r1")
        XCTAssertEqual(reservation?.customerID, "c1")
        let seenElsewhere = try await other.reservation(id: "r1")
        XCTAssertNil(seenElsewhere)
        let scheduleElsewhere = try await other.schedule(designerID: "d1")
        XCTAssertNil(scheduleElsewhere)
    }
}
