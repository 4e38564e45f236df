import Foundation
import PostgresTestSupport
import RPCCore
import RPCTestSupport
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// `ZipadooPromiseStreamTests`' watch on BookingService started on PostgreSQL: the snapshot, each arrival
/// once in rank order, a resume from the last position missing nothing, the end at T + 3 h, with the
/// events' positions coming from `PostgresPromiseStore` and `PostgresPromiseEventLog`.
final class ZipadooPromiseStreamOnPostgresTests: ZipadooPromiseStreamTests {
    private var database: TestDatabase?

    override func startFixture() async throws -> ZipadooPromiseFixture {
        let database = try await TestDatabase()
        self.database = database
        return try await ZipadooPromiseFixture.start(database: database.settings)
    }

    override func tearDown() async throws {
        try await super.tearDown()
        try await database?.close()
    }

    // Declared here so that test discovery lists it for this class too.
    override func testZipadooWatchersSeeEachArrivalOnceInRankOrderResumeWithoutGapsAndEndAtTheClose() async throws {
        try await super.testZipadooWatchersSeeEachArrivalOnceInRankOrderResumeWithoutGapsAndEndAtTheClose()
    }

    /// A watcher on a second replica sees each fix reported through the first live (the
    /// `promise_events` notification wakes it; it reads the event from the database), each once, in order.
    func testAWatcherOnAnotherReplicaSeesFixesReportedThroughTheFirstLive() async throws {
        let t = fixture.now + 2 * 60 * minute
        let promise = try await fixture.create(by: "ana", with: ["bo"], at: t)
        fixture.clock.set(Date(timeIntervalSince1970: Double(t - 20 * minute) / 1_000))
        var configuration = fixture.service.environment.configuration
        configuration.port = try ServiceHarness.unusedPort()
        configuration.metricsPort = 0
        configuration.dataDirectory = fixture.harness.dataRoot.appendingPathComponent("booking-2").path
        let second = try await fixture.harness.start(
            BookingServiceDefinition.self, configuration: configuration, clock: fixture.clock)
        let client = try RPCClient(configuration: fixture.harness.clientConfiguration(port: try await second.port))
        let clientTask = Task { await client.run() }
        let ana = try fixture.member("ana")
        let caughtUp = LockedValue(false)
        let watcher = Task { () throws -> [YediZipadoo.PromiseEvent] in
            try await YediZipadoo.Promises.Client(client).watchPromise(.init(promiseID: promise.id), options: ana) {
                stream in
                var seen: [YediZipadoo.PromiseEvent] = []
                for try await event in stream {
                    seen.append(event)
                    if case .caughtUp = event.event { caughtUp.withLock { $0 = true } }
                    if seen.filter({ if case .moved = $0.event { true } else { false } }).count == 3 { break }
                }
                return seen
            }
        }
        let ready = try await eventually(timeout: 10) { caughtUp.withLock { $0 } }
        XCTAssertTrue(ready)
        for metres in [900.0, 700, 500] {
            fixture.clock.advance(by: 2)
            _ = try await fixture.report("bo", promise.id, metres: metres)
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(10))
            watcher.cancel()
        }
        let seen = try await watcher.value
        timeout.cancel()
        let moved = seen.filter { if case .moved = $0.event { true } else { false } }
        XCTAssertEqual(moved.count, 3, "fixes reported through the other replica: \(seen)")
        XCTAssertEqual(moved.map(\.position), moved.map(\.position).sorted())
        client.beginGracefulShutdown()
        await clientTask.value
        try await second.stop()
    }
}
