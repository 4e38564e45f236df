import Foundation
import GRDB
import Logging
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// The real BookingService executable with 10,000 Zipadoo promises falling due at start, killed with
/// SIGKILL while its scheduler settles them and readers race it with GetPromise: after a restart every
/// promise is settled exactly once, completions equal participations and the ledger sums to 0.
final class ZipadooSettlementCrashTests: XCTestCase {
    static let promises = 10_000
    static let participants = 3
    static let fee = 100
    static let settledBeforeKill = 2_000

    func testZipadooSettlementKilledMidwaySettlesEachPromiseExactlyOnceAfterRestart() async throws {
        let harness = try ServiceHarness()
        let dataDirectory = harness.dataRoot.appendingPathComponent("zipadoo-crash").path
        let at = Int64(Date().timeIntervalSince1970 * 1_000) - PromiseRules.closesAfter - 10 * 60_000
        try await Self.seed(dataDirectory, at: at)
        let peers = ["account": try ServiceHarness.unusedPort()]
        let apps = ["--apps", ZipadooPromiseFixture.repositoryApps]
        let first = try await BookingProcess.start(
            harness: harness, dataDirectory: dataDirectory, peers: peers, arguments: apps)

        var configuration = Configuration()
        configuration.readonly = true
        let database = try DatabasePool(path: dataDirectory + "/booking.sqlite", configuration: configuration)
        func settled() async throws -> Int {
            try await database.read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM promise WHERE settled_at_ms IS NOT NULL") ?? 0
            }
        }
        let killed = LockedValue(false)
        let reads = LockedValue(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for reader in 0..<4 {
                group.addTask {
                    try await withRPCClient(configuration: first.clientConfiguration()) { client in
                        let promises = YediZipadoo.Promises.Client(client)
                        var index = reader
                        while !killed.value {
                            let promise = (index * 7_919) % Self.promises
                            let user = "z\(promise % 100)"
                            let options = ServiceHarness.bearer(
                                try harness.token(user: user, role: "member", app: "zipadoo"), timeout: .seconds(5))
                            do {
                                _ = try await promises.getPromise(.init(promiseID: "p\(promise)"), options: options)
                                reads.withLock { $0 += 1 }
                            } catch {
                                if killed.value { return }
                            }
                            index += 4
                        }
                    }
                }
            }
            group.addTask {
                while try await settled() < Self.settledBeforeKill { try await Task.sleep(for: .milliseconds(5)) }
                killed.withLock { $0 = true }
                first.kill()
            }
            try await group.waitForAll()
        }
        let atKill = try await settled()
        XCTAssertLessThan(atKill, Self.promises, "killed before the end")
        XCTAssertGreaterThan(reads.value, 0, "reads raced the worker")

        let second = try await BookingProcess.start(
            harness: harness, dataDirectory: dataDirectory, peers: peers, arguments: apps)
        let deadline = Date().addingTimeInterval(180)
        while try await settled() < Self.promises, Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        second.stop()

        let (integrity, settledCount, completed, late, entries, sum, jobs, unsettledRows) = try await database.read {
            db in
            (
                try String.fetchOne(db, sql: "PRAGMA integrity_check"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM promise WHERE settled_at_ms IS NOT NULL") ?? -1,
                try Int.fetchOne(db, sql: "SELECT SUM(completed) FROM promise_member_stats") ?? -1,
                try Int.fetchOne(db, sql: "SELECT SUM(late) FROM promise_member_stats") ?? -1,
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM potato_entry") ?? -1,
                try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(amount), 0) FROM potato_entry") ?? -1,
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM runtime_scheduled_job WHERE kind = ?",
                    arguments: [SQLitePromiseStore.settlementKind]) ?? -1,
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM promise_participant WHERE result = 0") ?? -1
            )
        }
        XCTAssertEqual(integrity, "ok")
        XCTAssertEqual(settledCount, Self.promises)
        XCTAssertEqual(completed, Self.promises * Self.participants, "one completion per participation")
        XCTAssertEqual(late, Self.promises * (Self.participants - 1), "everyone but the first arrival")
        XCTAssertEqual(entries, Self.promises * (Self.participants - 1) * 2, "one pair per latecomer")
        XCTAssertEqual(sum, 0, "the ledger sums to 0")
        XCTAssertEqual(jobs, 0)
        XCTAssertEqual(unsettledRows, 0)
        try database.close()
    }

    /// 10,000 promises of 3 participants (from 100 members) whose settlement jobs are due, the creator
    /// arrived on time, written into the stopped service's database as CreatePromise would.
    static func seed(_ directory: String, at: Int64) async throws {
        let database = try ServiceDatabase.open(
            directory: directory, name: "booking", migrations: BookingServiceDefinition.migrate,
            logger: Logger(label: "seed"))
        let scheduler = Scheduler(clock: SystemClock())
        try await database.write { db in
            for index in 0..<promises {
                let id = "p\(index)"
                try db.execute(
                    sql: """
                        INSERT INTO promise (id, creator_id, client_id, title, at_ms, place_name, place_address,
                            latitude, longitude, fee, created_at_ms)
                        VALUES (?, ?, ?, 'crash', ?, '시청', '', 37.5665, 126.978, ?, ?)
                        """,
                    arguments: [id, "z\(index % 100)", "c\(index)", at, fee, at - 3_600_000])
                for position in 0..<participants {
                    let user = "z\((index + position) % 100)"
                    try db.execute(
                        sql: """
                            INSERT INTO promise_participant (promise_id, user_id, position, arrived_at_ms, arrival_rank)
                            VALUES (?, ?, ?, ?, ?)
                            """,
                        arguments: [id, user, position, position == 0 ? at : nil, position == 0 ? 1 : nil])
                }
                _ = try scheduler.schedule(
                    ScheduledJob(
                        id: SQLitePromiseStore.settlementJobID(id), kind: SQLitePromiseStore.settlementKind,
                        subject: id, dueAtMilliseconds: at + PromiseRules.closesAfter),
                    in: db)
            }
        }
        try database.close()
    }
}
