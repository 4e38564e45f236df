import Foundation
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// Many clients, each on its own TLS connection, reserve the same slots at once: the database lets exactly
/// one reservation per slot through and everyone else is told the slot is taken.
final class ReservationRaceTests: XCTestCase {
    private typealias F = BookingFixture

    func testConcurrentClientsNeverDoubleBook() async throws {
        // Each racer books many slots here: a test of double booking, not of the per-customer quotas.
        var quotas = QuotaLimits.defaults
        _ = quotas.set("reservations.open", to: 1_000)
        _ = quotas.set("reservations.day", to: 1_000)
        let fixture = try await BookingFixture.start(quotas: quotas)
        try await fixture.addDesigner("designer-1")
        let port = try await fixture.service.port
        let clients = try (0..<100).map { _ in
            try RPCClient(configuration: fixture.harness.clientConfiguration(port: port))
        }
        let tasks = clients.map { client in Task { await client.run() } }
        let tokens = try (0..<100).map { index in
            var options = try fixture.caller("racer-\(index)", .customer)
            options.timeout = .seconds(120)
            return options
        }
        // Every connection is open (and the schedule stored) before the race starts.
        for client in clients {
            _ = try await YediBooking.BookingService.Client(client).getSchedule(.init(designerID: "designer-1"))
        }
        let style = try await fixture.booking.getMenu(.init(designerID: "designer-1")).styles[0].id

        func race(_ attempts: [(client: Int, start: Int64)]) async -> [(Int64, StatusCode)] {
            await withTaskGroup(of: (Int64, StatusCode).self) { group in
                for attempt in attempts {
                    group.addTask {
                        let code = await statusCode {
                            _ = try await YediBooking.BookingService.Client(clients[attempt.client]).createReservation(
                                .init(designerID: "designer-1", startAtMs: attempt.start, styleIDs: [style]),
                                options: tokens[attempt.client])
                        }
                        return (attempt.start, code)
                    }
                }
                var results: [(Int64, StatusCode)] = []
                for await result in group { results.append(result) }
                return results
            }
        }

        // 100 clients, one slot.
        let slot = F.ms(F.seoul(2027, 3, 11, hour: 10))
        let first = await race((0..<100).map { ($0, slot) })
        XCTAssertEqual(first.filter { $0.1 == .ok }.count, 1)
        XCTAssertEqual(first.filter { $0.1 == .alreadyExists }.count, 99, "\(Set(first.map(\.1)))")
        let count = try await fixture.count("SELECT COUNT(*) FROM reservation")
        XCTAssertEqual(count, 1)
        let count2 = try await fixture.count("SELECT COUNT(*) FROM booked_cell")
        XCTAssertEqual(count2, 12)

        // 20 slots (the 12th and 13th, 09:00–20:00 less the one booked), 50 clients each, all at once.
        let slots =
            (9..<21).map { F.ms(F.seoul(2027, 3, 12, hour: $0)) }
            + (9..<17).map { F.ms(F.seoul(2027, 3, 13, hour: $0)) }
        XCTAssertEqual(slots.count, 20)
        var attempts: [(client: Int, start: Int64)] = []
        for (index, start) in slots.enumerated() {
            for racer in 0..<50 { attempts.append(((index * 50 + racer) % 100, start)) }
        }
        attempts.shuffle()
        let second = await race(attempts)
        for start in slots {
            let codes = second.filter { $0.0 == start }.map(\.1)
            XCTAssertEqual(codes.count, 50)
            XCTAssertEqual(codes.filter { $0 == .ok }.count, 1, "slot \(start)")
            XCTAssertEqual(codes.filter { $0 == .alreadyExists }.count, 49, "slot \(start): \(Set(codes))")
        }
        let count3 = try await fixture.count("SELECT COUNT(*) FROM reservation")
        XCTAssertEqual(count3, 21)
        let count4 = try await fixture.count(
            "SELECT COUNT(*) FROM (SELECT start_at_ms FROM reservation GROUP BY designer_id, start_at_ms HAVING COUNT(*) > 1)"
        )
        XCTAssertEqual(
            count4, 0)
        let count5 = try await fixture.count("SELECT COUNT(*) FROM booked_cell")
        XCTAssertEqual(count5, 21 * 12)

        for client in clients { client.beginGracefulShutdown() }
        for task in tasks { await task.value }
        try await fixture.stop()
    }
}
