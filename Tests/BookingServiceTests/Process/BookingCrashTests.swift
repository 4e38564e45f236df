import Foundation
import GRDB
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

/// The real BookingService executable is killed with SIGKILL in the middle of a burst of concurrent
/// reservations (some contending for the same slots): after a restart on the same data folder every
/// reservation answered OK is there, no slot is booked twice, and the database is intact.
final class BookingCrashTests: XCTestCase {
    private static let answeredBeforeKill = 60

    func testEveryReservationAnsweredBeforeSIGKILLSurvivesARestart() async throws {
        let harness = try ServiceHarness()
        // AccountService stands in for the shop hours (09–21 Seoul) in this test process.
        let shops = ShopDirectory()
        let designers = (1...3).map { "crash-designer-\($0)" }
        for designer in designers { shops.add(designer) }
        let account = try await shops.start(harness)
        let dataDirectory = harness.dataRoot.appendingPathComponent("booking-crash").path
        let first = try await BookingProcess.start(
            harness: harness, dataDirectory: dataDirectory, peers: ["account": account.port])
        // What AccountService's outbox sends when a designer signs up.
        try await withRPCClient(configuration: first.clientConfiguration(identity: "account")) { client in
            for designer in designers {
                _ = try await YediBooking.BookingService.Client(client).setUpDesigner(.init(designerID: designer))
            }
        }

        // Slots of the next 10 days, hours 09–20 in Seoul: 360; each is wanted by two workers.
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Asia/Seoul")!
        let tomorrow = calendar.date(byAdding: .day, value: 1, to: calendar.startOfDay(for: Date()))!
        var slots: [(designer: String, start: Int64)] = []
        for day in 0..<10 {
            for hour in 9..<21 {
                let start = calendar.date(byAdding: .hour, value: day * 24 + hour, to: tomorrow)!
                for designer in designers { slots.append((designer, Int64(start.timeIntervalSince1970 * 1_000))) }
            }
        }
        slots.shuffle()
        let wanted = slots

        let answered = LockedValue([String: (designer: String, start: Int64)]())
        let taken = LockedValue(0)
        let workers = 8
        let killed = LockedValue(false)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<workers {
                let options = ServiceHarness.bearer(
                    try harness.token(user: "crash-customer-\(worker)", role: .customer), timeout: .seconds(10))
                group.addTask {
                    try await withRPCClient(configuration: first.clientConfiguration()) { client in
                        let booking = YediBooking.BookingService.Client(client)
                        var styles: [String: String] = [:]
                        // Workers w and w+4 walk the same slots: every slot is contended.
                        for (index, slot) in wanted.enumerated() where index % (workers / 2) == worker % (workers / 2) {
                            if killed.value { return }
                            do {
                                if styles[slot.designer] == nil {
                                    styles[slot.designer] = try await booking.getMenu(
                                        .init(designerID: slot.designer), options: options
                                    ).styles[0].id
                                }
                                let reservation = try await booking.createReservation(
                                    .init(
                                        designerID: slot.designer, startAtMs: slot.start,
                                        styleIDs: [styles[slot.designer]!], idempotencyKey: "w\(worker)-\(index)"),
                                    options: options)
                                answered.withLock { $0[reservation.id] = (slot.designer, slot.start) }
                            } catch let error as RPCError where error.code == .alreadyExists {
                                taken.withLock { $0 += 1 }
                            } catch {
                                return  // the process is gone; this answer is unknown
                            }
                        }
                    }
                }
            }
            group.addTask {
                while answered.value.count < Self.answeredBeforeKill { try await Task.sleep(for: .milliseconds(5)) }
                killed.withLock { $0 = true }
                first.kill()
            }
            try await group.waitForAll()
        }
        let acknowledged = answered.value
        XCTAssertGreaterThanOrEqual(acknowledged.count, Self.answeredBeforeKill)

        let second = try await BookingProcess.start(
            harness: harness, dataDirectory: dataDirectory, peers: ["account": account.port])
        defer { second.stop() }
        try await withRPCClient(configuration: second.clientConfiguration(identity: "content")) { client in
            let booking = YediBooking.BookingService.Client(client)
            for (id, slot) in acknowledged {
                // Read as ContentService acting for the reservation's designer.
                let designer = try harness.token(user: slot.designer, role: .designer)
                let reservation = try await booking.getReservation(
                    .init(reservationID: id),
                    options: CallOptions(metadata: [AuthenticationInterceptor.onBehalfOfMetadataKey: designer]))
                XCTAssertEqual(reservation.status, .confirmed, id)
                XCTAssertEqual(reservation.designerID, slot.designer)
                XCTAssertEqual(reservation.startAtMs, slot.start)
            }
        }
        var configuration = Configuration()
        configuration.readonly = true
        let database = try DatabasePool(path: dataDirectory + "/booking.sqlite", configuration: configuration)
        let (integrity, doubles, confirmed, cells, orphans) = try await database.read { db in
            (
                try String.fetchOne(db, sql: "PRAGMA integrity_check"),
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT COUNT(*) FROM (SELECT 1 FROM reservation WHERE status = 'confirmed'
                        GROUP BY designer_id, start_at_ms HAVING COUNT(*) > 1)
                        """) ?? -1,
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM reservation WHERE status = 'confirmed'") ?? -1,
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM booked_cell") ?? -1,
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM booked_cell WHERE reservation_id NOT IN (SELECT id FROM reservation)"
                )
                    ?? -1
            )
        }
        XCTAssertEqual(integrity, "ok")
        XCTAssertEqual(doubles, 0, "a slot booked twice")
        XCTAssertGreaterThanOrEqual(confirmed, acknowledged.count)
        XCTAssertLessThanOrEqual(confirmed, acknowledged.count + 8, "at most one in flight per worker")
        XCTAssertEqual(cells, confirmed * 12)
        XCTAssertEqual(orphans, 0)
        XCTAssertGreaterThan(taken.value, 0, "the burst contended for slots")
        await account.stop()
    }
}

/// The BookingService executable (built beside the tests) as a child process on the test PKI.
final class BookingProcess: @unchecked Sendable {
    let port: Int
    private let process: RunningProcess
    private let harness: ServiceHarness

    static func start(
        harness: ServiceHarness, dataDirectory: String, peers: [String: Int], timeout: TimeInterval = 60,
        arguments: [String] = [], environment: [String: String?] = [:]
    ) async throws -> BookingProcess {
        let service = try BookingProcess(
            harness: harness, dataDirectory: dataDirectory, port: try ServiceHarness.unusedPort(), peers: peers,
            extraArguments: arguments, environment: environment)
        let configuration = harness.clientConfiguration(port: service.port)
        let serving = try await eventually(timeout: timeout) {
            let status = try? await withRPCClient(configuration: configuration) { client in
                try await YediHealth.Health.Client(client).check(
                    .init(), options: CallOptions(timeout: .milliseconds(500))
                )
                .status
            }
            return status == .serving
        }
        guard serving else {
            let result = service.process.finish(timeout: 5)
            throw BookingProcessError(description: "BookingService did not become SERVING:\n\(result.combinedOutput)")
        }
        return service
    }

    private init(
        harness: ServiceHarness, dataDirectory: String, port: Int, peers: [String: Int], extraArguments: [String],
        environment: [String: String?]
    ) throws {
        self.harness = harness
        self.port = port
        var arguments = [
            "--pki", harness.pki.devPKI.path, "--data", dataDirectory, "--port", "\(port)",
            "--metrics-port", "\(try ServiceHarness.unusedPort())", "--log-level", "warning", "--shutdown-grace", "1",
            // The burst is 8 customers booking hundreds of slots: about durability, not the per-user quotas.
            "--quota", "reservations.open=1000", "--quota", "reservations.day=1000",
        ]
        for (name, peerPort) in peers.sorted(by: { $0.key < $1.key }) {
            arguments += ["--peer", "\(name)=127.0.0.1:\(peerPort)"]
        }
        process = try RunningProcess(
            try BuiltProducts.path("BookingService"), arguments + extraArguments, environment: environment)
    }

    func clientConfiguration(identity: String? = nil) -> ClientConfiguration {
        harness.clientConfiguration(port: port, identity: identity)
    }

    /// Waits for the process to end by itself (a kill point), with what it printed and how it ended.
    func waitForExit(timeout: TimeInterval = 10) -> ProcessResult {
        process.finish(timeout: timeout)
    }

    /// SIGKILL: no shutdown, no flush; what was acknowledged must already be on disk.
    @discardableResult
    func kill() -> ProcessResult {
        process.send(SIGKILL)
        return process.finish(timeout: 10)
    }

    @discardableResult
    func stop() -> ProcessResult {
        process.send(SIGTERM)
        return process.finish(timeout: 20)
    }
}

struct BookingProcessError: Error, CustomStringConvertible {
    var description: String
}
