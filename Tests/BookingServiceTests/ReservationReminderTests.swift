import Foundation
import GRDB
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// The day-before reminder (the platform's scheduler, used by YeDi): scheduled by the booking
/// transaction, cancelled by the cancelling one, run once by the injected clock, delivered to
/// AccountService's Notify through the outbox.
final class ReservationReminderTests: XCTestCase {
    private var fixture: BookingFixture!
    private typealias F = BookingFixture

    override func setUp() async throws {
        fixture = try await BookingFixture.start()  // 2027-03-10 08:00 in Seoul
        try await fixture.addDesigner("designer-1")
    }

    override func tearDown() async throws {
        try await fixture.stop()
    }

    private func reserve(_ start: Date, customer: String) async throws -> YediBooking.Reservation {
        let menu = try await fixture.booking.getMenu(.init(designerID: "designer-1"))
        return try await fixture.booking.createReservation(
            .init(designerID: "designer-1", startAtMs: F.ms(start), styleIDs: [menu.styles[0].id]),
            options: try fixture.customer(customer))
    }

    private func reminders() async throws -> [String: Int64] {
        try await fixture.service.environment.database.read { db in
            var jobs: [String: Int64] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT subject, due_at_ms FROM runtime_scheduled_job WHERE kind = 'reservation-reminder'")
            {
                jobs[row["subject"]] = row["due_at_ms"]
            }
            return jobs
        }
    }

    func testSchedulerRemindsTheCustomerTheDayBeforeOnceAndNotAfterACancellation() async throws {
        let tomorrow = try await reserve(F.seoul(2027, 3, 11, hour: 14), customer: "customer-1")
        let tonight = try await reserve(F.seoul(2027, 3, 10, hour: 20), customer: "customer-2")
        let cancelled = try await reserve(F.seoul(2027, 3, 12, hour: 10), customer: "customer-3")
        _ = try await fixture.booking.cancelReservation(
            .init(reservationID: cancelled.id), options: try fixture.customer("customer-3"))

        let scheduled = try await reminders()
        XCTAssertEqual(
            scheduled, [tomorrow.id: tomorrow.startAtMs - 24 * 3_600_000],
            "one reminder, 24 h ahead; none for tonight's booking (\(tonight.id)), none left for the cancelled one")

        fixture.clock.set(F.seoul(2027, 3, 10, hour: 13, minute: 59))
        try await Task.sleep(for: .milliseconds(200))
        XCTAssertTrue(fixture.shops.notified.value.isEmpty, "not before it is due")

        fixture.clock.set(F.seoul(2027, 3, 10, hour: 14))
        let delivered = try await eventually(timeout: 20) { !self.fixture.shops.notified.value.isEmpty }
        XCTAssertTrue(delivered, "the reminder reaches AccountService's Notify")
        let notice = try XCTUnwrap(fixture.shops.notified.value.first)
        XCTAssertEqual(notice.userID, "customer-1")
        XCTAssertEqual(notice.app, "yedi")
        XCTAssertEqual(notice.kind, "reservation-reminder")
        XCTAssertTrue(notice.body.contains("3월 11일 14:00"), notice.body)
        XCTAssertEqual(notice.data.first { $0.key == "reservation_id" }?.value, tomorrow.id)
        let left = try await reminders()
        XCTAssertTrue(left.isEmpty, "a reminder runs once")
        try await Task.sleep(for: .milliseconds(200))
        XCTAssertEqual(fixture.shops.notified.value.count, 1)
    }

    /// A job due for a reservation that was cancelled meanwhile (say, a job written before the cancelling
    /// code cancelled it) finds it no longer confirmed and reminds nobody.
    func testSchedulerReminderChecksItsReservationWhenItRuns() async throws {
        let booked = try await reserve(F.seoul(2027, 3, 11, hour: 14), customer: "customer-1")
        let record = try await fixture.store.reservation(id: booked.id)
        let reservation = try XCTUnwrap(record)
        let job = try XCTUnwrap(ReservationReminder.job(for: reservation))
        let outbox = fixture.service.environment.outbox
        let ran = try await fixture.service.environment.database.write { db in
            try db.execute(sql: "UPDATE reservation SET status = 'cancelled' WHERE id = ?", arguments: [booked.id])
            return try ReservationReminder.run(job, outbox: outbox, db)
        }
        XCTAssertFalse(ran)
        var lastMinute = reservation
        lastMinute.createdAtMilliseconds = reservation.startAtMilliseconds - 3_600_000
        XCTAssertNil(ReservationReminder.job(for: lastMinute), "booked an hour ahead: no reminder")
    }
}
