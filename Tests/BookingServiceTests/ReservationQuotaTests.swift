import Foundation
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// One customer cannot hoard a designer's calendar: at most 5 upcoming reservations at once and 10 made
/// per Seoul day, counted in the inserting transaction.
final class ReservationQuotaTests: XCTestCase {
    private typealias F = BookingFixture

    /// 20 concurrent creates by one customer, each for a free slot of its own: exactly 5 go through.
    func testConcurrentCreatesNeverPassTheOpenQuota() async throws {
        let fixture = try await BookingFixture.start()
        try await fixture.addDesigner("designer-1")
        let style = try await fixture.booking.getMenu(.init(designerID: "designer-1")).styles[0].id
        let options = try fixture.customer()
        // 20 free slots: 10 on the 11th and 10 on the 12th, 9:00–19:00 (the stand-in shop opens 9–21).
        let slots = [11, 12].flatMap { day in (9..<19).map { hour in (day, hour) } }
        let results = await withTaskGroup(of: (StatusCode, String).self) { group in
            for (day, hour) in slots {
                group.addTask {
                    do {
                        _ = try await fixture.booking.createReservation(
                            .init(
                                designerID: "designer-1", startAtMs: F.ms(F.seoul(2027, 3, day, hour: hour)),
                                styleIDs: [style]), options: options)
                        return (.ok, "")
                    } catch let error as RPCError {
                        return (error.code, error.message)
                    } catch {
                        return (.unknown, "\(error)")
                    }
                }
            }
            var all: [(StatusCode, String)] = []
            for await result in group { all.append(result) }
            return all
        }
        XCTAssertEqual(results.count, 20)
        XCTAssertEqual(results.filter { $0.0 == .ok }.count, 5, "\(results)")
        let refused = results.filter { $0.0 != .ok }
        XCTAssertEqual(refused.count, 15)
        for (code, message) in refused {
            XCTAssertEqual(code, .resourceExhausted)
            XCTAssertEqual(message, "quota reservations.open: at most 5 upcoming reservations")
        }
        let stored = try await fixture.count("SELECT COUNT(*) FROM reservation WHERE status = 'confirmed'")
        XCTAssertEqual(stored, 5)
        // Another customer is not limited by the first one's reservations.
        _ = try await fixture.booking.createReservation(
            .init(designerID: "designer-1", startAtMs: F.ms(F.seoul(2027, 3, 13, hour: 10)), styleIDs: [style]),
            options: try fixture.customer("customer-2"))
        try await fixture.stop()
    }

    /// Cancelling frees an open place but not the day's: the 11th reservation of a Seoul day is refused,
    /// and the next Seoul day (midnight in Seoul, not UTC) allows more.
    func testDailyQuotaCountsCancelledOnesAndResetsAtSeoulMidnight() async throws {
        let clock = ManualClock(F.seoul(2027, 3, 10, hour: 8))
        let fixture = try await BookingFixture.start(clock: clock)
        try await fixture.addDesigner("designer-1")
        let style = try await fixture.booking.getMenu(.init(designerID: "designer-1")).styles[0].id
        let options = try fixture.customer()
        func reserve(_ hour: Int, day: Int = 12) async throws -> YediBooking.Reservation {
            try await fixture.booking.createReservation(
                .init(designerID: "designer-1", startAtMs: F.ms(F.seoul(2027, 3, day, hour: hour)), styleIDs: [style]),
                options: options)
        }
        for hour in 9..<19 {
            let made = try await reserve(hour)
            _ = try await fixture.booking.cancelReservation(.init(reservationID: made.id), options: options)
        }
        do {
            _ = try await reserve(20)
            XCTFail("an 11th reservation in one day was accepted")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .resourceExhausted)
            XCTAssertEqual(error.message, "quota reservations.day: at most 10 reservations made per day")
        }
        // 23:59 in Seoul is still the same day; 00:00 the next.
        clock.set(F.seoul(2027, 3, 10, hour: 23, minute: 59))
        let still = await statusCode { _ = try await reserve(20) }
        XCTAssertEqual(still, .resourceExhausted)
        clock.set(F.seoul(2027, 3, 11, hour: 0))
        _ = try await reserve(20)
        try await fixture.stop()
    }

    /// A retry with the same idempotency key at the quota answers the first reservation, not a refusal.
    func testARetryAtTheQuotaAnswersTheFirstReservation() async throws {
        var quotas = QuotaLimits.defaults
        XCTAssertTrue(quotas.set("reservations.open", to: 1))
        let fixture = try await BookingFixture.start(quotas: quotas)
        try await fixture.addDesigner("designer-1")
        let style = try await fixture.booking.getMenu(.init(designerID: "designer-1")).styles[0].id
        let request = YediBooking.CreateReservationRequest(
            designerID: "designer-1", startAtMs: F.ms(F.seoul(2027, 3, 11, hour: 10)), styleIDs: [style],
            idempotencyKey: "k1")
        let first = try await fixture.booking.createReservation(request, options: try fixture.customer())
        let retry = try await fixture.booking.createReservation(request, options: try fixture.customer())
        XCTAssertEqual(first.id, retry.id)
        var other = request
        other.startAtMs = F.ms(F.seoul(2027, 3, 11, hour: 12))
        other.idempotencyKey = "k2"
        let refused = await statusCode {
            _ = try await fixture.booking.createReservation(other, options: try fixture.customer())
        }
        XCTAssertEqual(refused, .resourceExhausted)
        try await fixture.stop()
    }
}
