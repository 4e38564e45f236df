import Foundation
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// Reservations through the RPCs: cancelling, idempotent retries, who may do what, the lists, the
/// designer's timeline and calendar, the internal GetReservation and PurgeUser.
final class ReservationTests: XCTestCase {
    private var fixture: BookingFixture!
    private typealias F = BookingFixture

    override func setUp() async throws {
        fixture = try await BookingFixture.start()
        try await fixture.addDesigner("designer-1")
        try await fixture.addDesigner("designer-2")
    }

    override func tearDown() async throws {
        try await fixture.stop()
    }

    private func reserve(
        _ start: Date, customer: String = "customer-1", designer: String = "designer-1", key: String = "",
        styles: Int = 1
    ) async throws -> YediBooking.Reservation {
        let menu = try await fixture.booking.getMenu(.init(designerID: designer))
        return try await fixture.booking.createReservation(
            .init(
                designerID: designer, startAtMs: F.ms(start), styleIDs: menu.styles.prefix(styles).map(\.id),
                idempotencyKey: key),
            options: try fixture.customer(customer))
    }

    private func cancel(_ id: String, as options: CallOptions) async throws -> YediBooking.Reservation {
        try await fixture.booking.cancelReservation(.init(reservationID: id), options: options)
    }

    func testCancellingFreesTheSlotAndOnlyTheCustomerOrDesignerMayCancel() async throws {
        let start = F.seoul(2027, 3, 11, hour: 14)
        let booked = try await reserve(start, styles: 2)
        XCTAssertEqual(booked.totalPriceKRW, 45_000 + 46_000)
        XCTAssertEqual(booked.styles.map(\.name), ["레이어드컷", "허쉬컷"])

        let stranger = await statusCode {
            _ = try await self.cancel(booked.id, as: try self.fixture.customer("customer-2"))
        }
        XCTAssertEqual(stranger, .permissionDenied)
        let otherDesigner = await statusCode {
            _ = try await self.cancel(booked.id, as: try self.fixture.designer("designer-2"))
        }
        XCTAssertEqual(otherDesigner, .permissionDenied)
        let unknown = await statusCode { _ = try await self.cancel("nope", as: try self.fixture.customer()) }
        XCTAssertEqual(unknown, .notFound)
        let stored = try await fixture.store.reservation(id: booked.id)?.status
        XCTAssertEqual(stored, .confirmed)

        let cancelled = try await cancel(booked.id, as: try fixture.customer())
        XCTAssertEqual(cancelled.status, .cancelled)
        XCTAssertEqual(cancelled.cancelledAtMs, F.ms(fixture.clock.now))
        let again = try await cancel(booked.id, as: try fixture.customer())
        XCTAssertEqual(again.status, .cancelled)
        let day = F.date(2027, 3, 11)
        let free = try await fixture.booking.listFreeSlots(.init(designerID: "designer-1", from: day, to: day))
        XCTAssertTrue(free.days[0].freeStartAtMs.contains(F.ms(start)))

        // Someone else books the freed slot; the designer cancels it; a started one cannot be cancelled.
        let second = try await reserve(start, customer: "customer-2")
        let byDesigner = try await cancel(second.id, as: try fixture.designer())
        XCTAssertEqual(byDesigner.status, .cancelled)
        let third = try await reserve(start, customer: "customer-3")
        fixture.clock.set(start.addingTimeInterval(60))
        let late = await statusCode { _ = try await self.cancel(third.id, as: try self.fixture.customer("customer-3")) }
        XCTAssertEqual(late, .failedPrecondition)
        let count = try await fixture.count("SELECT COUNT(*) FROM booked_cell")
        XCTAssertEqual(count, 12)
    }

    func testARetryWithTheSameIdempotencyKeyReturnsTheFirstReservation() async throws {
        let start = F.seoul(2027, 3, 11, hour: 15)
        let first = try await reserve(start, key: "tap-1")
        let retry = try await reserve(start, key: "tap-1")
        XCTAssertEqual(retry.id, first.id)
        XCTAssertEqual(retry, first)
        let count = try await fixture.count("SELECT COUNT(*) FROM reservation")
        XCTAssertEqual(count, 1)
        // Even after the start has passed, the retry still finds it.
        fixture.clock.set(start.addingTimeInterval(3_600))
        let reservation = try await reserve(start, key: "tap-1").id
        XCTAssertEqual(reservation, first.id)
        fixture.clock.set(F.seoul(2027, 3, 10, hour: 8))
        // The same key for another slot is a client bug, not a retry.
        let misuse = await statusCode { _ = try await self.reserve(F.seoul(2027, 3, 11, hour: 16), key: "tap-1") }
        XCTAssertEqual(misuse, .invalidArgument)
        // Keys are per customer: another customer's "tap-1" is their own (and finds the slot taken).
        let other = await statusCode { _ = try await self.reserve(start, customer: "customer-2", key: "tap-1") }
        XCTAssertEqual(other, .alreadyExists)
        let long = await statusCode {
            _ = try await self.reserve(
                F.seoul(2027, 3, 11, hour: 17), key: String(repeating: "k", count: 101))
        }
        XCTAssertEqual(long, .invalidArgument)
    }

    func testReservationRequestsAreValidated() async throws {
        let start = F.ms(F.seoul(2027, 3, 11, hour: 10))
        let menu = try await fixture.booking.getMenu(.init(designerID: "designer-1"))
        let other = try await fixture.booking.getMenu(.init(designerID: "designer-2"))
        let cases: [(YediBooking.CreateReservationRequest, StatusCode)] = [
            (.init(designerID: "designer-1", startAtMs: start, styleIDs: []), .invalidArgument),
            (.init(designerID: "designer-1", startAtMs: start, styleIDs: ["missing"]), .invalidArgument),
            (.init(designerID: "designer-1", startAtMs: start, styleIDs: [other.styles[0].id]), .invalidArgument),
            (
                .init(designerID: "designer-1", startAtMs: start, styleIDs: [menu.styles[0].id, menu.styles[0].id]),
                .invalidArgument
            ),
            (
                .init(designerID: "designer-1", startAtMs: start, styleIDs: Array(menu.styles.prefix(11).map(\.id))),
                .invalidArgument
            ),
            (.init(designerID: "", startAtMs: start, styleIDs: [menu.styles[0].id]), .invalidArgument),
            (.init(designerID: "ghost", startAtMs: start, styleIDs: [menu.styles[0].id]), .notFound),
            (.init(designerID: "designer-1", startAtMs: -1, styleIDs: [menu.styles[0].id]), .failedPrecondition),
            (.init(designerID: "designer-1", startAtMs: .max, styleIDs: [menu.styles[0].id]), .failedPrecondition),
        ]
        for (request, expected) in cases {
            let code = await statusCode {
                _ = try await self.fixture.booking.createReservation(request, options: try self.fixture.customer())
            }
            XCTAssertEqual(code, expected, "\(request)")
        }
        let count = try await fixture.count("SELECT COUNT(*) FROM reservation")
        XCTAssertEqual(count, 0)
    }

    func testAccessRules() async throws {
        let schedule = YediBooking.Schedule(
            openingMinute: 540, closingMinute: 1260, timeZone: "Asia/Seoul", slotMinutes: 60)
        let customerEditsSchedule = await statusCode {
            _ = try await self.fixture.booking.updateSchedule(
                .init(schedule: schedule), options: try self.fixture.customer())
        }
        XCTAssertEqual(customerEditsSchedule, .permissionDenied)
        let customerEditsMenu = await statusCode {
            _ = try await self.fixture.booking.updateMenu(.init(styles: []), options: try self.fixture.customer())
        }
        XCTAssertEqual(customerEditsMenu, .permissionDenied)
        let customerClosesDays = await statusCode {
            _ = try await self.fixture.booking.updateClosedDays(.init(), options: try self.fixture.customer())
        }
        XCTAssertEqual(customerClosesDays, .permissionDenied)
        let menu = try await fixture.booking.getMenu(.init(designerID: "designer-1"))
        let request = YediBooking.CreateReservationRequest(
            designerID: "designer-1", startAtMs: F.ms(F.seoul(2027, 3, 11, hour: 10)), styleIDs: [menu.styles[0].id])
        let anonymous = await statusCode { _ = try await self.fixture.booking.createReservation(request) }
        XCTAssertEqual(anonymous, .unauthenticated)
        let designerBooks = await statusCode {
            _ = try await self.fixture.booking.createReservation(
                request, options: try self.fixture.designer("designer-2"))
        }
        XCTAssertEqual(designerBooks, .permissionDenied)
        let timeline = await statusCode {
            _ = try await self.fixture.booking.getDayTimeline(
                .init(date: F.date(2027, 3, 11)), options: try self.fixture.customer())
        }
        XCTAssertEqual(timeline, .permissionDenied)

        let booked = try await fixture.booking.createReservation(request, options: try fixture.customer())
        let userAsks = await statusCode {
            _ = try await self.fixture.booking.getReservation(
                .init(reservationID: booked.id), options: try self.fixture.customer())
        }
        XCTAssertEqual(userAsks, .permissionDenied)
        func onBehalfOf(_ options: CallOptions) -> CallOptions {
            var forwarded = CallOptions()
            forwarded.metadata[AuthenticationInterceptor.onBehalfOfMetadataKey] = String(
                options.metadata["authorization"]!.dropFirst("Bearer ".count))
            return forwarded
        }
        for caller in ["content", "chat"] {
            let (client, rpc, task) = try await fixture.serviceClient(caller)
            for party in [try fixture.customer(), try fixture.designer()] {
                let seen = try await client.getReservation(.init(reservationID: booked.id), options: onBehalfOf(party))
                XCTAssertEqual(seen.customerID, "customer-1")
                XCTAssertEqual(seen.designerID, "designer-1")
                XCTAssertEqual(seen.startAtMs, booked.startAtMs)
                XCTAssertEqual(seen.status, .confirmed)
            }
            // A service acting for nobody, or for someone else, does not read a reservation by naming it.
            let forNobody = await statusCode { _ = try await client.getReservation(.init(reservationID: booked.id)) }
            XCTAssertEqual(forNobody, .permissionDenied)
            let forAnother = await statusCode {
                _ = try await client.getReservation(
                    .init(reservationID: booked.id), options: onBehalfOf(try self.fixture.customer("customer-2")))
            }
            XCTAssertEqual(forAnother, .permissionDenied)
            let missing = await statusCode {
                _ = try await client.getReservation(
                    .init(reservationID: "nope"), options: onBehalfOf(try self.fixture.customer()))
            }
            XCTAssertEqual(missing, .notFound)
            let purge = await statusCode { _ = try await client.purgeUser(.init(userID: "customer-1")) }
            XCTAssertEqual(purge, .permissionDenied, "only account purges")
            rpc.beginGracefulShutdown()
            await task.value
        }
    }

    func testListsTimelineAndCalendar() async throws {
        // Four reservations of customer-1: two on the 11th, one on the 20th, one today at 09:00 (soon past).
        fixture.clock.set(F.seoul(2027, 3, 10, hour: 8))
        let today = try await reserve(F.seoul(2027, 3, 10, hour: 9))
        let a = try await reserve(F.seoul(2027, 3, 11, hour: 10))
        let b = try await reserve(F.seoul(2027, 3, 11, hour: 11))
        let c = try await reserve(F.seoul(2027, 3, 20, hour: 10))
        let elsewhere = try await reserve(
            F.seoul(2027, 3, 11, hour: 10), customer: "customer-2", designer: "designer-2")
        let dropped = try await reserve(F.seoul(2027, 3, 12, hour: 10))
        _ = try await fixture.booking.cancelReservation(
            .init(reservationID: dropped.id), options: try fixture.customer())
        fixture.clock.set(F.seoul(2027, 3, 10, hour: 23, minute: 59))

        let upcoming = try await fixture.booking.listReservations(
            .init(filter: .upcoming, page: .init(limit: 2)), options: try fixture.customer())
        XCTAssertEqual(upcoming.reservations.map(\.id), [a.id, b.id])
        XCTAssertEqual(upcoming.reservations.map(\.daysLeft), [1, 1])
        let rest = try await fixture.booking.listReservations(
            .init(filter: .upcoming, page: .init(cursor: upcoming.page?.nextCursor ?? "", limit: 2)),
            options: try fixture.customer())
        XCTAssertEqual(rest.reservations.map(\.id), [c.id])
        XCTAssertEqual(rest.reservations.first?.daysLeft, 10)
        XCTAssertEqual(rest.page?.nextCursor, "")

        fixture.clock.set(F.seoul(2027, 3, 21, hour: 0, minute: 1))
        let past = try await fixture.booking.listReservations(
            .init(filter: .past, page: .init(limit: 3)), options: try fixture.customer())
        XCTAssertEqual(past.reservations.map(\.id), [c.id, b.id, a.id], "newest first")
        XCTAssertEqual(past.reservations.first?.daysLeft, -1)
        let older = try await fixture.booking.listReservations(
            .init(filter: .past, page: .init(cursor: past.page?.nextCursor ?? "", limit: 3)),
            options: try fixture.customer())
        XCTAssertEqual(older.reservations.map(\.id), [today.id])
        let cancelled = try await fixture.booking.listReservations(
            .init(filter: .cancelled), options: try fixture.customer())
        XCTAssertEqual(cancelled.reservations.map(\.id), [dropped.id])
        let designerPast = try await fixture.booking.listReservations(
            .init(filter: .past), options: try fixture.designer("designer-2"))
        XCTAssertEqual(designerPast.reservations.map(\.id), [elsewhere.id])
        for bad in [
            YediBooking.ListReservationsRequest(filter: .unspecified),
            .init(filter: .past, page: .init(cursor: "garbage")),
            .init(filter: .past, page: .init(limit: -1)),
        ] {
            let code = await statusCode {
                _ = try await self.fixture.booking.listReservations(bad, options: try self.fixture.customer())
            }
            XCTAssertEqual(code, .invalidArgument, "\(bad)")
        }

        // The designer's day: 12 hour slots of 09–21; 10 and 11 booked, the rest past (the clock is on the 21st).
        fixture.clock.set(F.seoul(2027, 3, 11, hour: 10, minute: 30))
        let day = try await fixture.booking.getDayTimeline(
            .init(date: F.date(2027, 3, 11)), options: try fixture.designer())
        XCTAssertEqual(day.slots.count, 12)
        XCTAssertEqual(day.slots.prefix(4).map(\.state), [.past, .booked, .booked, .available])
        XCTAssertEqual(day.slots[1].minuteOfDay, 600)
        XCTAssertEqual(day.reservations.map(\.id), [a.id, b.id])

        let month = try await fixture.booking.getMonthCalendar(
            .init(year: 2027, month: 3), options: try fixture.designer())
        XCTAssertEqual(month.days.count, 31)
        XCTAssertEqual(month.days.map(\.reservationCount).reduce(0, +), 4)
        XCTAssertEqual(month.days[10].reservationCount, 2)
        XCTAssertEqual(month.days[19].reservationCount, 1)
        XCTAssertEqual(month.days[11].reservationCount, 0, "the cancelled one is not counted")
        let badMonth = await statusCode {
            _ = try await self.fixture.booking.getMonthCalendar(
                .init(year: 2027, month: 13), options: try self.fixture.designer())
        }
        XCTAssertEqual(badMonth, .invalidArgument)
    }

    func testMenuEditsKeepBookedPrices() async throws {
        let menu = try await fixture.booking.getMenu(.init(designerID: "designer-1"))
        let booked = try await reserve(F.seoul(2027, 3, 11, hour: 10))
        var styles = Array(menu.styles.prefix(2))
        styles[0].priceKRW = 50_000
        styles.append(.init(name: "  두피 스파 ", category: .other, priceKRW: 30_000, durationMinutes: 40))
        let edited = try await fixture.booking.updateMenu(.init(styles: styles), options: try fixture.designer())
        XCTAssertEqual(edited.styles.count, 3)
        XCTAssertEqual(edited.styles[0].id, menu.styles[0].id)
        XCTAssertEqual(edited.styles[2].name, "두피 스파")
        XCTAssertFalse(edited.styles[2].id.isEmpty)
        let menu2 = try await fixture.booking.getMenu(.init(designerID: "designer-1"))
        XCTAssertEqual(menu2, edited)
        let kept = try await fixture.store.reservation(id: booked.id)
        XCTAssertEqual(kept?.totalPriceKRW, 45_000, "booked at the old price")
        let removedStyle = await statusCode {
            _ = try await self.fixture.booking.createReservation(
                .init(
                    designerID: "designer-1", startAtMs: F.ms(F.seoul(2027, 3, 11, hour: 11)),
                    styleIDs: [menu.styles[5].id]), options: try self.fixture.customer())
        }
        XCTAssertEqual(removedStyle, .invalidArgument)

        let bad: [[YediBooking.Style]] = [
            [],
            [.init(id: "foreign", name: "컷", category: .cut, priceKRW: 1, durationMinutes: 30)],
            [.init(name: "", category: .cut, priceKRW: 1, durationMinutes: 30)],
            [.init(name: "컷", category: .unspecified, priceKRW: 1, durationMinutes: 30)],
            [.init(name: "컷", category: .cut, priceKRW: -1, durationMinutes: 30)],
            [.init(name: "컷", category: .cut, priceKRW: 1, durationMinutes: 0)],
            [edited.styles[0], edited.styles[0]],
        ]
        for styles in bad {
            let code = await statusCode {
                _ = try await self.fixture.booking.updateMenu(
                    .init(styles: styles), options: try self.fixture.designer())
            }
            XCTAssertEqual(code, .invalidArgument, "\(styles)")
        }
        let menu3 = try await fixture.booking.getMenu(.init(designerID: "designer-1"))
        XCTAssertEqual(menu3, edited)
    }

    func testPurgeUserRemovesReservationsAndADesignersScheduleAndMenu() async throws {
        _ = try await reserve(F.seoul(2027, 3, 11, hour: 10), customer: "customer-1", designer: "designer-1")
        let kept = try await reserve(F.seoul(2027, 3, 11, hour: 11), customer: "customer-2", designer: "designer-2")
        _ = try await reserve(F.seoul(2027, 3, 11, hour: 12), customer: "customer-2", designer: "designer-1")
        _ = try await fixture.booking.updateClosedDays(
            .init(add: [F.date(2027, 4, 1)]), options: try fixture.designer("designer-1"))
        let (account, rpc, task) = try await fixture.serviceClient("account")
        defer { rpc.beginGracefulShutdown() }
        _ = try await account.purgeUser(.init(userID: "designer-1"))
        _ = try await account.purgeUser(.init(userID: "designer-1"))
        let count = try await fixture.count("SELECT COUNT(*) FROM schedule WHERE designer_id = 'designer-1'")
        XCTAssertEqual(count, 0)
        let count2 = try await fixture.count("SELECT COUNT(*) FROM style WHERE designer_id = 'designer-1'")
        XCTAssertEqual(count2, 0)
        let count3 = try await fixture.count("SELECT COUNT(*) FROM closed_day")
        XCTAssertEqual(count3, 0)
        let count4 = try await fixture.count("SELECT COUNT(*) FROM reservation")
        XCTAssertEqual(count4, 1)
        let count5 = try await fixture.count("SELECT COUNT(*) FROM booked_cell")
        XCTAssertEqual(count5, 12)
        _ = try await account.purgeUser(.init(userID: "customer-2"))
        let count6 = try await fixture.count("SELECT COUNT(*) FROM reservation")
        XCTAssertEqual(count6, 0)
        let count7 = try await fixture.count("SELECT COUNT(*) FROM booked_cell")
        XCTAssertEqual(count7, 0)
        let stored = try await fixture.store.reservation(id: kept.id)
        XCTAssertNil(stored)
        let count8 = try await fixture.count("SELECT COUNT(*) FROM schedule WHERE designer_id = 'designer-2'")
        XCTAssertEqual(count8, 1)
        let empty = await statusCode { _ = try await account.purgeUser(.init(userID: "")) }
        XCTAssertEqual(empty, .invalidArgument)
        rpc.beginGracefulShutdown()
        await task.value
    }
}
