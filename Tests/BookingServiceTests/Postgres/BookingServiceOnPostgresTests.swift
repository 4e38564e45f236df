import Foundation
import PostgresNIO
import PostgresTestSupport
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// BookingService started by the runner on PostgreSQL (`--database postgresql://…`, docs/postgres.md):
/// it migrates an empty database itself, serves reservations and payments from it, keeps nothing in its
/// data folder that must survive, and two replicas on one database give a slot once.
final class BookingServiceOnPostgresTests: XCTestCase {
    private typealias F = BookingFixture

    /// A replica on its own new data folder, with the deployment's log key that every replica shares.
    private func replica(_ harness: ServiceHarness, _ database: TestDatabase) async throws -> BookingFixture {
        let folder = harness.dataRoot.appendingPathComponent("replica-\(UUID().uuidString.prefix(8))").path
        let logKey = harness.dataRoot.appendingPathComponent("log.key")
        if !FileManager.default.fileExists(atPath: logKey.path) {
            try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: logKey)
        }
        return try await BookingFixture.start(
            harness: harness, dataDirectory: folder, database: .postgres(database.settings), logKey: logKey.path)
    }

    private static func reserve(_ fixture: BookingFixture, _ start: Date, customer: String) async throws
        -> YediBooking.Reservation
    {
        let style = try await fixture.booking.getMenu(.init(designerID: "designer-1")).styles[0].id
        return try await fixture.booking.createReservation(
            .init(designerID: "designer-1", startAtMs: F.ms(start), styleIDs: [style]),
            options: try fixture.customer(customer))
    }

    private func count(_ table: String, _ database: TestDatabase) async throws -> Int {
        try await database.postgres.read { connection in
            try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT count(*)::bigint FROM \(table)"), logger: TestPostgres.logger
            )
            .collect().first!.decode(Int.self)
        }
    }

    func testTheRunnerMigratesAnEmptyDatabaseAndAReplicaWithAnEmptyDataFolderServesWhatAnotherStored() async throws {
        let database = try await TestDatabase()
        let harness = try ServiceHarness()
        let start = F.seoul(2027, 3, 11, hour: 14)
        let first = try await replica(harness, database)
        let booked: YediBooking.Reservation
        do {
            try await first.addDesigner("designer-1")
            booked = try await Self.reserve(first, start, customer: "customer-1")
        } catch {
            try? await first.stop()
            try? await database.close()
            throw error
        }
        try await first.stop()
        let firstFolder = first.service.environment.dataDirectory
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: firstFolder.appendingPathComponent("booking.sqlite").path),
            "on PostgreSQL the data folder holds no database")
        let versions = try await database.postgres.read { connection in
            try await connection.query(
                "SELECT name FROM runtime_schema_migrations ORDER BY position", logger: TestPostgres.logger
            )
            .collect().map { try $0.decode(String.self) }
        }
        XCTAssertEqual(versions, BookingPostgresSchema.migrations.map(\.name))

        // Another replica, on a new empty data folder, with the first one gone.
        let second = try await replica(harness, database)
        do {
            second.shops.add("designer-1")
            let mine = try await second.booking.listReservations(
                .init(filter: .upcoming, page: .init(limit: 10)), options: try second.customer("customer-1"))
            XCTAssertEqual(mine.reservations.map(\.id), [booked.id])
            XCTAssertFalse(
                FileManager.default.fileExists(
                    atPath: second.service.environment.dataDirectory.appendingPathComponent("log.key").path),
                "the shared --log-key, not a key of the replica's own")
            let taken = await statusCode { _ = try await Self.reserve(second, start, customer: "customer-2") }
            XCTAssertEqual(taken, .alreadyExists)
            let day = F.date(2027, 3, 11)
            let free = try await second.booking.listFreeSlots(.init(designerID: "designer-1", from: day, to: day))
            XCTAssertFalse(free.days[0].freeStartAtMs.contains(F.ms(start)))
        } catch {
            try? await second.stop()
            try? await database.close()
            throw error
        }
        try await second.stop()
        try await database.close()
    }

    func testTwoReplicasOnOneDatabaseGiveASlotOnce() async throws {
        let database = try await TestDatabase()
        let harness = try ServiceHarness()
        let replicas = [try await replica(harness, database), try await replica(harness, database)]
        do {
            try await replicas[0].addDesigner("designer-1")
            replicas[1].shops.add("designer-1")
            let start = F.seoul(2027, 3, 11, hour: 10)
            let codes = await withTaskGroup(of: StatusCode.self) { group in
                for customer in 0..<20 {
                    group.addTask {
                        await statusCode {
                            _ = try await Self.reserve(replicas[customer % 2], start, customer: "customer-\(customer)")
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            XCTAssertEqual(codes.filter { $0 == .ok }.count, 1, "\(codes)")
            XCTAssertEqual(codes.filter { $0 == .alreadyExists }.count, 19, "\(codes)")
            let reservations = try await count("reservation", database)
            XCTAssertEqual(reservations, 1)
            // One reservation's cells: 5-minute cells over one slot of the schedule, as on SQLite.
            let cells = try await count("booked_cell", database)
            let schedule = try await replicas[1].booking.getSchedule(.init(designerID: "designer-1"))
            XCTAssertEqual(cells, Int(schedule.slotMinutes) / 5)
        } catch {
            for replica in replicas { try? await replica.stop() }
            try? await database.close()
            throw error
        }
        for replica in replicas { try await replica.stop() }
        try await database.close()
    }

    /// Health follows the database: NOT_SERVING (for `Health/Check`, `Health/Watch` and `/healthz`) while
    /// it refuses connections, store calls answer UNAVAILABLE within the timeout, and SERVING again once it
    /// is back, without a restart.
    func testHealthIsNotServingWhileTheDatabaseDoesNotAnswerAndServingOnceItDoes() async throws {
        let database = try await TestDatabase(timeout: .seconds(2))
        let harness = try ServiceHarness()
        let fixture = try await replica(harness, database)
        let name = database.settings.database
        do {
            try await fixture.addDesigner("designer-1")
            let health = fixture.service.server.health
            XCTAssertEqual(health.status(of: ""), .serving)

            try await TestPostgres.administer("ALTER DATABASE \(name) ALLOW_CONNECTIONS false")
            try await TestPostgres.administer(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)' AND pid <> pg_backend_pid()"
            )
            let notServing = try await eventually(timeout: 20) {
                health.status(of: "") == .notServing
                    && health.status(of: YediBooking.BookingService.descriptor.fullName) == .notServing
            }
            XCTAssertTrue(notServing, "NOT_SERVING while the database refuses")
            let started = ContinuousClock.now
            let down = await statusCode {
                _ = try await fixture.booking.getSchedule(.init(designerID: "designer-1"))
            }
            XCTAssertEqual(down, .unavailable)
            XCTAssertLessThan(ContinuousClock.now - started, .seconds(10), "answered within the database timeout")

            try await TestPostgres.administer("ALTER DATABASE \(name) ALLOW_CONNECTIONS true")
            let serving = try await eventually(timeout: 60) { health.status(of: "") == .serving }
            XCTAssertTrue(serving, "SERVING again once the database answers")
            let schedule = try await fixture.booking.getSchedule(.init(designerID: "designer-1"))
            XCTAssertEqual(schedule.designerID, "designer-1")
        } catch {
            try? await TestPostgres.administer("ALTER DATABASE \(name) ALLOW_CONNECTIONS true")
            try? await fixture.stop()
            try? await database.close()
            throw error
        }
        try await fixture.stop()
        try await database.close()
    }
}
