import Foundation
import RPCCore
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `ListFreeSlots` caches each designer's days; every change of the schedule, closed dates and
/// reservations is seen by the next call even with the cache warm, and a call covers at most 31 days.
final class FreeSlotCacheTests: XCTestCase {
    private var fixture: BookingFixture!
    private typealias F = BookingFixture
    private let day = F.date(2027, 3, 11)

    override func setUp() async throws {
        fixture = try await BookingFixture.start()
        try await fixture.addDesigner("designer-1")
    }

    override func tearDown() async throws {
        try await fixture.stop()
    }

    private func free(from: YediCommon.LocalDate? = nil, to: YediCommon.LocalDate? = nil) async throws -> [Int64] {
        let answer = try await fixture.booking.listFreeSlots(
            .init(designerID: "designer-1", from: from ?? day, to: to ?? day))
        return answer.days.first?.freeStartAtMs ?? []
    }

    private func reserve(hour: Int, customer: String = "customer-1") async throws -> YediBooking.Reservation {
        let menu = try await fixture.booking.getMenu(.init(designerID: "designer-1"))
        return try await fixture.booking.createReservation(
            .init(
                designerID: "designer-1", startAtMs: F.ms(F.seoul(2027, 3, 11, hour: hour)),
                styleIDs: [menu.styles[0].id]),
            options: try fixture.customer(customer))
    }

    func testABookingRemovesTheSlotFromTheNextListEvenWithTheCacheWarm() async throws {
        let fourteen = F.ms(F.seoul(2027, 3, 11, hour: 14))
        _ = try await free()  // stores the designer's default schedule: a change, so nothing cached yet counts
        let before = try await free()
        XCTAssertTrue(before.contains(fourteen))
        let hitsBefore = try await cacheHits()
        let listed1 = try await free()
        XCTAssertEqual(listed1, before)
        let hitsAfter = try await cacheHits()
        XCTAssertEqual(hitsAfter - hitsBefore, 1, "the second call read the cached day")

        let booked = try await reserve(hour: 14)
        let after = try await free()
        XCTAssertFalse(after.contains(fourteen), "the booked slot is gone at once")
        XCTAssertEqual(after.count, before.count - 1)

        _ = try await fixture.booking.cancelReservation(
            .init(reservationID: booked.id), options: try fixture.customer())
        let listed2 = try await free()
        XCTAssertEqual(listed2, before, "a cancellation frees the slot at once")
    }

    func testClosedDaysScheduleChangesAPurgeAndTheClockAreSeenWithTheCacheWarm() async throws {
        let open = try await free()
        XCTAssertEqual(open.count, 12, "09:00–21:00 in hour slots")
        _ = try await free()

        _ = try await fixture.booking.updateClosedDays(.init(add: [day]), options: try fixture.designer())
        let closed = try await fixture.booking.listFreeSlots(.init(designerID: "designer-1", from: day, to: day))
        XCTAssertEqual(closed.days.first?.closed, true)
        _ = try await fixture.booking.updateClosedDays(.init(remove: [day]), options: try fixture.designer())
        let listed3 = try await free()
        XCTAssertEqual(listed3, open)

        _ = try await fixture.booking.updateSchedule(
            .init(schedule: .init(openingMinute: 600, closingMinute: 720, timeZone: "Asia/Seoul", slotMinutes: 60)),
            options: try fixture.designer())
        let listed4 = try await free()
        XCTAssertEqual(listed4, [10, 11].map { F.ms(F.seoul(2027, 3, 11, hour: $0)) })

        // A purged customer's reservation frees the designer's slot (the purge names no designer).
        _ = try await reserve(hour: 10, customer: "customer-9")
        let listed5 = try await free()
        XCTAssertEqual(listed5, [F.ms(F.seoul(2027, 3, 11, hour: 11))])
        let (account, rpc, task) = try await fixture.serviceClient("account")
        _ = try await account.purgeUser(.init(userID: "customer-9"))
        rpc.beginGracefulShutdown()
        await task.value
        let listed6 = try await free()
        XCTAssertEqual(listed6, [10, 11].map { F.ms(F.seoul(2027, 3, 11, hour: $0)) })

        // The cached day is filtered by the clock when read.
        fixture.clock.set(F.seoul(2027, 3, 11, hour: 10, minute: 30))
        let listed7 = try await free()
        XCTAssertEqual(listed7, [F.ms(F.seoul(2027, 3, 11, hour: 11))])
    }

    func testACallCoversAtMost31Days() async throws {
        let month = try await fixture.booking.listFreeSlots(
            .init(designerID: "designer-1", from: F.date(2027, 3, 1), to: F.date(2027, 3, 31)))
        XCTAssertEqual(month.days.count, 31)
        do {
            _ = try await fixture.booking.listFreeSlots(
                .init(designerID: "designer-1", from: F.date(2027, 3, 1), to: F.date(2027, 4, 1)))
            XCTFail("32 days were answered")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .invalidArgument)
            XCTAssertTrue(error.message.hasPrefix("to: at most 31 days"), error.message)
        }
    }

    /// `yedi_cache_hits_total{cache="booking-free-days"}` from the service's `/metrics`.
    private func cacheHits() async throws -> Int {
        let port = try await fixture.service.metricsPort
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/metrics")!)
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n")
        where line.hasPrefix("yedi_cache_hits_total") && line.contains("cache=\"booking-free-days\"") {
            if let number = line.split(separator: " ").last.flatMap({ Double($0) }) { return Int(number) }
        }
        return 0
    }
}
