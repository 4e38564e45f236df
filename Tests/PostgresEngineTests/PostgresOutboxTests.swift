import Foundation
import Logging
import PostgresNIO
import PostgresTestSupport
import XCTest
import YediProto
import YediSync

@testable import ServiceRuntime

/// The outbox on PostgreSQL (docs/postgres.md, "The outbox on PostgreSQL"): a job is delivered only once
/// its transaction commits, promptly (the after-commit wake-up), by exactly one of several replicas'
/// workers, never while another replica's lease holds, and after a failure not before the due time the
/// row keeps. Jobs go to an in-process destination, so no peer service is needed.
final class PostgresOutboxTests: XCTestCase {
    private var database: TestDatabase!
    private var workers: [Task<Void, Never>] = []

    override func setUp() async throws {
        database = try await TestDatabase(service: "outbox", migrations: RuntimePostgresSchema.migrations)
    }

    override func tearDown() async throws {
        for worker in workers { worker.cancel() }
        for worker in workers { await worker.value }
        workers = []
        try await database?.close()
        database = nil
    }

    private var postgres: ServicePostgres { database.postgres }

    private static let destination = "test-destination"

    /// A replica's outbox whose in-process destination records into `sender`.
    private func makeOutbox(_ sender: RecordingSender, clock: any WallClock = SystemClock()) -> Outbox {
        let outbox = Outbox(ids: RandomIDGenerator(), clock: clock)
        outbox.register(sender, destination: Self.destination)
        return outbox
    }

    /// Starts a worker of replica `replica`; it stops at the test's end (or when its task is cancelled).
    @discardableResult
    private func startWorker(
        _ outbox: Outbox, replica: String, configure: (inout OutboxWorker.Settings) -> Void = { _ in }
    ) -> Task<Void, Never> {
        var settings = OutboxWorker.Settings()
        configure(&settings)
        let worker = OutboxWorker(
            postgres: postgres, outbox: outbox, peers: ServicePeers(), logger: Logger(label: "yedi.test.outbox"),
            settings: settings, replica: replica)
        let task = Task { _ = try? await worker.run() }
        workers.append(task)
        return task
    }

    private func enqueue(_ outbox: Outbox, _ text: String) async throws -> String {
        try await postgres.write { tx in
            try await outbox.enqueue(in: tx, destination: Self.destination, message: Self.message(text))
        }
    }

    private static func message(_ text: String) -> YediCommon.PurgeUserRequest {
        YediCommon.PurgeUserRequest(userID: text)
    }

    private func pendingJobs() async throws -> Int {
        try await postgres.read { connection in
            let rows = try await connection.query("SELECT count(*) FROM runtime_outbox", logger: TestPostgres.logger)
                .collect()
            return try rows.first?.decode(Int.self) ?? -1
        }
    }

    func testAJobWhoseTransactionRollsBackIsNeverDelivered() async throws {
        let sender = RecordingSender()
        let outbox = makeOutbox(sender)
        startWorker(outbox, replica: "a")
        struct Abort: Error {}
        do {
            try await postgres.write { tx in
                try await outbox.enqueue(in: tx, destination: Self.destination, message: Self.message("rolled-back"))
                throw Abort()
            }
            XCTFail("the transaction should have failed")
        } catch is Abort {}
        // The worker looks every second: give it two looks.
        try await Task.sleep(for: .milliseconds(2_200))
        XCTAssertEqual(sender.deliveries.count, 0)
        let pending = try await pendingJobs()
        XCTAssertEqual(pending, 0)
    }

    /// The poll is a minute here: only the after-commit wake-up can deliver within seconds. The enqueuing
    /// process's clock is a day ahead, and the job is due all the same (due times are PostgreSQL's).
    func testACommittedJobIsDeliveredPromptlyAndDeleted() async throws {
        let sender = RecordingSender()
        let outbox = makeOutbox(sender, clock: ManualClock(Date().addingTimeInterval(86_400)))
        startWorker(outbox, replica: "a") { $0.replicaPollInterval = .seconds(60) }
        try await Task.sleep(for: .milliseconds(300))  // the worker's first look, at an empty table
        let started = ContinuousClock.now
        let id = try await enqueue(outbox, "committed")
        let delivered = try await waitUntil(timeout: .seconds(10)) { sender.deliveries[id] == 1 }
        XCTAssertTrue(delivered, "the committed job was not delivered")
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(5), "delivered at a poll, not at the wake-up")
        let drained = try await waitUntil(timeout: .seconds(5)) { try await self.pendingJobs() == 0 }
        XCTAssertTrue(drained, "the delivered job was not deleted")
        let payload = try XCTUnwrap(sender.payload(of: id))
        XCTAssertEqual(try YediCommon.PurgeUserRequest(serializedBytes: payload).userID, "committed")
    }

    /// Two replicas' workers on one database, each woken by its own enqueues and polling for the other's:
    /// every job delivered exactly once, and both replicas delivered some.
    func testTwoReplicasDeliverEachOf200JobsExactlyOnce() async throws {
        let senders = [RecordingSender(), RecordingSender()]
        let outboxes = senders.map { makeOutbox($0) }
        startWorker(outboxes[0], replica: "replica-a")
        startWorker(outboxes[1], replica: "replica-b")
        var ids: [String] = []
        for batch in 0..<20 {
            let outbox = outboxes[batch % 2]
            let enqueued = try await postgres.write { tx in
                var ids: [String] = []
                for index in 0..<10 {
                    ids.append(
                        try await outbox.enqueue(
                            in: tx, destination: Self.destination, message: Self.message("job-\(batch)-\(index)")))
                }
                return ids
            }
            ids += enqueued
        }
        let drained = try await waitUntil(timeout: .seconds(60)) { try await self.pendingJobs() == 0 }
        let left = try await pendingJobs()
        XCTAssertTrue(drained, "jobs left: \(left)")
        // A late second delivery would show after the table is empty.
        try await Task.sleep(for: .milliseconds(500))
        let deliveries = senders[0].deliveries.merging(senders[1].deliveries, uniquingKeysWith: +)
        XCTAssertEqual(Set(ids).count, 200)
        XCTAssertEqual(Set(deliveries.keys), Set(ids), "every job delivered")
        XCTAssertEqual(deliveries.filter { $0.value != 1 }, [:], "jobs delivered more than once")
        XCTAssertGreaterThan(senders[0].deliveries.count, 0, "replica a delivered nothing")
        XCTAssertGreaterThan(senders[1].deliveries.count, 0, "replica b delivered nothing")
    }

    /// A replica that died holding a lease: its job waits for the lease, then another replica delivers it.
    func testAJobLeasedByADeadReplicaWaitsForItsLeaseThenIsDelivered() async throws {
        let sender = RecordingSender()
        let outbox = makeOutbox(sender)
        let id = try await postgres.write { tx in
            let id = try await outbox.enqueue(in: tx, destination: Self.destination, message: Self.message("leased"))
            try await tx.query(
                """
                UPDATE runtime_outbox SET leased_until = clock_timestamp() + interval '4 seconds', leased_by = 'dead'
                WHERE id = \(id)
                """)
            return id
        }
        let started = ContinuousClock.now
        startWorker(outbox, replica: "alive")
        try await Task.sleep(for: .milliseconds(2_500))
        XCTAssertNil(sender.deliveries[id], "delivered while another replica's lease held")
        let delivered = try await waitUntil(timeout: .seconds(15)) { sender.deliveries[id] == 1 }
        XCTAssertTrue(delivered, "not delivered after the lease ran out")
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .milliseconds(3_500))
        let drained = try await waitUntil(timeout: .seconds(5)) { try await self.pendingJobs() == 0 }
        XCTAssertTrue(drained)
    }

    /// A failure is stored in the row: attempts, the error, a due time ahead on PostgreSQL's clock, no
    /// lease; another replica's worker honours the due time.
    func testAFailedDeliveryIsRecordedAndItsDueTimeHonouredByAnotherReplica() async throws {
        let failing = RecordingSender(failing: true)
        let failingOutbox = makeOutbox(failing)
        let id = try await enqueue(failingOutbox, "fails-once")
        let firstWorker = startWorker(failingOutbox, replica: "a") {
            $0.initialBackoff = .seconds(5)
            $0.maximumBackoff = .seconds(5)
        }
        let failed = try await waitUntil(timeout: .seconds(10)) { try await self.row(id)?.attempts == 1 }
        XCTAssertTrue(failed, "the failure was not recorded")
        firstWorker.cancel()
        await firstWorker.value
        let fetched = try await self.row(id)
        let row = try XCTUnwrap(fetched)
        XCTAssertEqual(row.attempts, 1)
        XCTAssertTrue(row.lastError?.contains("refused by the test") == true, "last_error: \(row.lastError ?? "nil")")
        XCTAssertNil(row.leasedBy, "the failed job keeps no lease")
        // 5 s ± 20%, less the time since the failure.
        XCTAssertGreaterThan(row.dueInSeconds, 2.5)
        XCTAssertLessThan(row.dueInSeconds, 6.5)

        let sender = RecordingSender()
        startWorker(makeOutbox(sender), replica: "b")
        try await Task.sleep(for: .seconds(max(0, row.dueInSeconds - 1.5)))
        XCTAssertNil(sender.deliveries[id], "delivered before its due time")
        let delivered = try await waitUntil(timeout: .seconds(10)) { sender.deliveries[id] == 1 }
        XCTAssertTrue(delivered, "not delivered once due")
        XCTAssertEqual(failing.attemptsCount, 1)
    }

    func testDroppingOutsideMessagesTakesOnlyThoseMentioningAndNoPeerJob() async throws {
        let outbox = Outbox(ids: RandomIDGenerator(), clock: SystemClock())
        let (dropped, kept) = try await postgres.write { tx in
            try await outbox.enqueue(
                in: tx,
                push: .init(
                    deviceToken: "partner-phone", title: "스터디 요청", body: "", template: "slp-request",
                    values: [.init(name: "from_id", value: "user-gone")]))
            try await outbox.enqueue(in: tx, sms: .init(to: "+821099998888", text: "[SLP] 인증번호 123456"))
            let other = try await outbox.enqueue(
                in: tx, push: .init(deviceToken: "other-phone", title: "새 메시지", body: "안녕"))
            let mail = try await outbox.enqueue(
                in: tx, mail: .init(to: "someone@example.com", subject: "hello", text: "hi"))
            let peer = try await outbox.enqueue(
                in: tx, peer: "chat", method: YediChat.ChatService.Method.purgeUser, request: .init(userID: "user-gone")
            )
            let own = try await outbox.enqueue(in: tx, destination: "payments", message: Self.message("user-gone"))
            let dropped = try await outbox.dropOutsideMessages(mentioning: ["user-gone", "+821099998888", ""], in: tx)
            return (dropped, [other, mail, peer, own])
        }
        XCTAssertEqual(dropped, 2, "the push naming the user and the SMS to their number")
        let left = try await postgres.read { connection in
            try await connection.query("SELECT id FROM runtime_outbox", logger: TestPostgres.logger).collect()
                .map { try $0.decode(String.self) }
        }
        XCTAssertEqual(Set(left), Set(kept), "another's push, the mail, the peer job and the own destination's stay")
    }

    // MARK: Helpers

    private struct JobRow {
        var attempts: Int
        var lastError: String?
        var leasedBy: String?
        /// Seconds from now (PostgreSQL's clock) to the job's due time.
        var dueInSeconds: Double
    }

    private func row(_ id: String) async throws -> JobRow? {
        try await postgres.read { connection in
            try await connection.query(
                """
                SELECT attempts, last_error, leased_by, extract(epoch FROM due_at - clock_timestamp())::float8
                FROM runtime_outbox WHERE id = \(id)
                """, logger: TestPostgres.logger
            )
            .collect()
            .first
            .map { row in
                let (attempts, lastError, leasedBy, due) = try row.decode((Int, String?, String?, Double).self)
                return JobRow(attempts: attempts, lastError: lastError, leasedBy: leasedBy, dueInSeconds: due)
            }
        }
    }

    private func waitUntil(
        timeout: Duration, _ condition: () async throws -> Bool
    ) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }
}

/// An in-process destination that records each delivery by job id, or refuses every one.
private final class RecordingSender: OutboxSender {
    private let failing: Bool
    private let state = TSanVisibleMutex<(counts: [String: Int], payloads: [String: [UInt8]], attempts: Int)>(
        ([:], [:], 0))

    init(failing: Bool = false) {
        self.failing = failing
    }

    var deliveries: [String: Int] { state.withLock { $0.counts } }
    var attemptsCount: Int { state.withLock { $0.attempts } }

    func payload(of id: String) -> [UInt8]? { state.withLock { $0.payloads[id] } }

    func send(payload: [UInt8], jobID: String) async throws {
        state.withLock { $0.attempts += 1 }
        if failing { throw RefusedByTest() }
        // A little work, so that two workers' deliveries overlap.
        try await Task.sleep(for: .milliseconds(2))
        state.withLock { state in
            state.counts[jobID, default: 0] += 1
            state.payloads[jobID] = payload
        }
    }

    struct RefusedByTest: Error, CustomStringConvertible {
        var description: String { "refused by the test" }
    }
}
