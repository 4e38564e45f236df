import AccessTokens
import Foundation
import RPCCore
import RPCTestSupport
import ServiceTestSupport
import XCTest
import YediProto

/// Issue 31's reservation race across processes: 3 BookingService replicas on one PostgreSQL, clients spread
/// over them. 100 customers race for one slot: exactly one OK, 99 ALREADY_EXISTS, one reservation and its
/// cells stored. Then 50 customers race for each of 20 slots at once: exactly 20 OK.
final class SlotRaceOnPostgresTests: ReplicatedWritesTestCase {
    override class var engine: YediSystem.Engine { .postgres(replicas: 3) }

    func testCustomersSpreadOverThreeReplicasGetEachSlotOnce() async throws {
        let shop = try openShop()
        guard shop.starts.count >= 21 else { return XCTFail("21 free slots needed, found \(shop.starts.count)") }
        // Customers' tokens as AccountService signs them (the dev PKI's key), valid now.
        let issuer = AccessTokenIssuer(signingKey: try system.pki.tokenSigningKey())
        func bearer(_ customer: String) throws -> CallOptions {
            ServiceHarness.bearer(try issuer.issue(userID: customer, role: .customer, sessionID: "s-\(customer)").token)
        }
        let configurations = (0..<system.replicaCount).map { replica in
            system.pki.rpcClientConfiguration(ports: [system.rpcPort("booking", replica: replica)], identity: nil) {
                $0.maxAttempts = 1
            }
        }
        try await withRPCClient(configuration: configurations[0]) { first in
            try await withRPCClient(configuration: configurations[1]) { second in
                try await withRPCClient(configuration: configurations[2]) { third in
                    let replicas = [first, second, third].map { YediBooking.BookingService.Client($0) }
                    /// Every customer books `start` at once, customer i through replica i mod 3.
                    func race(_ start: Int64, _ customers: [String]) async throws -> [StatusCode] {
                        let calls = try customers.map { ($0, try bearer($0)) }
                        return await withTaskGroup(of: StatusCode.self) { group in
                            for (index, (customer, options)) in calls.enumerated() {
                                let replica = replicas[index % replicas.count]
                                let request = YediBooking.CreateReservationRequest(
                                    designerID: shop.designerID, startAtMs: start, styleIDs: [shop.styleID],
                                    idempotencyKey: "race-\(customer)")
                                group.addTask {
                                    await statusCode {
                                        _ = try await replica.createReservation(request, options: options)
                                    }
                                }
                            }
                            return await group.reduce(into: []) { $0.append($1) }
                        }
                    }
                    let one = try await race(shop.starts[0], (0..<100).map { "one-slot-\($0)" })
                    XCTAssertEqual(one.filter { $0 == .ok }.count, 1, "\(one)")
                    XCTAssertEqual(one.filter { $0 == .alreadyExists }.count, 99, "\(one)")

                    let twenty = try await withThrowingTaskGroup(of: [StatusCode].self) { group in
                        for slot in 1...20 {
                            let customers = (0..<50).map { "slot-\(slot)-\($0)" }
                            group.addTask { try await race(shop.starts[slot], customers) }
                        }
                        return try await group.reduce(into: []) { $0 += $1 }
                    }
                    XCTAssertEqual(twenty.count, 1_000)
                    XCTAssertEqual(twenty.filter { $0 == .ok }.count, 20)
                    XCTAssertEqual(twenty.filter { $0 == .alreadyExists }.count, 980)
                }
            }
        }
        // Stored: 21 reservations, each with its one slot's cells (5-minute cells of a 60-minute slot).
        let reservations = try await system.rowCount("reservation", of: "booking")
        XCTAssertEqual(reservations, 21)
        let cells = try await system.rowCount("booked_cell", of: "booking")
        XCTAssertEqual(cells, 21 * 60 / 5)
    }
}
