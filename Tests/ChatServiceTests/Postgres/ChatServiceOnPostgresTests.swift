import Foundation
import Logging
import PostgresNIO
import PostgresTestSupport
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import ChatService

/// ChatService started by the runner on PostgreSQL, as two replicas of one database (docs/postgres.md,
/// "Chat across replicas"): a stream on one replica gets what is sent through the other (the
/// `chat_events` notification wakes it; it reads the bodies from the database), in order and without a
/// gap, also after resuming on the other replica; a read mark through one shows in the other's history;
/// a purge through one ends the user's streams on both; a match room's member listening on one replica
/// gets no push for a message sent through the other; 200 subscribers get 10,000 messages sent elsewhere
/// exactly and in order; a send that commits late is delivered, not skipped.
final class ChatServiceOnPostgresTests: XCTestCase {
    private var database: TestDatabase!
    private var fixture: ChatFixture?
    private var second: (service: RunningService, client: RPCClient, task: Task<Void, Never>)?

    override func setUp() async throws {
        database = try await TestDatabase()
    }

    override func tearDown() async throws {
        if let second {
            second.client.beginGracefulShutdown()
            await second.task.value
            try? await second.service.stop()
        }
        try? await fixture?.stop()
        try await database?.close()
    }

    private func start(apps: String? = nil) async throws -> (ChatFixture, YediChat.ChatService.Client) {
        let fixture = try await ChatFixture.start(apps: apps, database: .postgres(database.settings))
        self.fixture = fixture
        let second = try await fixture.startReplica(
            dataDirectory: fixture.harness.dataRoot.appendingPathComponent("chat-2").path)
        self.second = second
        return (fixture, YediChat.ChatService.Client(second.client))
    }

    func testAStreamOnOneReplicaGetsWhatIsSentThroughTheOtherInOrderAndResumesOnEither() async throws {
        let (fixture, other) = try await start()
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        // The designer listens on the second replica; the customer sends through the first.
        let listener = StreamCollector()
        let listening = Task { await listener.run(other, user: designer, stopAfter: 11) }
        let caughtUp = try await eventually(timeout: 10) { listener.caughtUp }
        XCTAssertTrue(caughtUp)
        for index in 1...10 { _ = try await fixture.send(customer, room, "message \(index)") }
        let all = try await eventually(timeout: 10) { listener.realEvents.count >= 11 }
        listening.cancel()
        await listening.value
        XCTAssertTrue(all, "the other replica's stream got \(listener.realEvents.count) of 11 events")
        let seqs = listener.realEvents.compactMap { event -> Int64? in
            if case .messageAdded(let added)? = event.event { return added.message?.seq }
            return nil
        }
        XCTAssertEqual(seqs, Array(1...10), "every message once, in order, from the other replica")
        let positions = listener.realEvents.map(\.position)
        XCTAssertEqual(positions, Array(1...11), "the room's creation, then each message: no gap")

        // Resumed on the first replica from a position in the middle: the rest, nothing twice.
        let resumed = StreamCollector()
        await resumed.run(fixture.chat, user: designer, after: positions[4], stopAfter: 6)
        XCTAssertEqual(resumed.realEvents.map(\.position), Array(positions[5...]))

        // A read mark through the second replica shows in the first's history.
        _ = try await other.markRead(.init(roomID: room, upToSeq: 10), options: designer.options(timeout: .seconds(10)))
        let page = try await fixture.chat.listMessages(
            .init(roomID: room), options: customer.options(timeout: .seconds(10)))
        XCTAssertEqual(page.otherReadSeq, 10, "the designer's read mark, written through the other replica")
    }

    /// The listeners' connections terminated (PostgreSQL keeps no notification for a listener that is
    /// away): each replica listens again and its streams re-read, so a message sent meanwhile still
    /// reaches the stream on the other replica.
    func testAStreamGetsWhatWasSentWhileItsReplicasListenerWasCutOff() async throws {
        let (fixture, other) = try await start()
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        let listener = StreamCollector()
        let listening = Task { await listener.run(other, user: designer, stopAfter: 3) }
        let caughtUp = try await eventually(timeout: 10) { listener.caughtUp }
        XCTAssertTrue(caughtUp)
        for index in 1...2 {
            try await TestPostgres.administer(
                """
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = '\(database.settings.database)' AND application_name = 'yedi-listener'
                """)
            _ = try await fixture.send(customer, room, "while away \(index)")
        }
        let all = try await eventually(timeout: 10) { listener.realEvents.count >= 3 }
        listening.cancel()
        await listening.value
        XCTAssertTrue(all, "got \(listener.realEvents.count) of 3 events")
        XCTAssertEqual(listener.realEvents.map(\.position), [1, 2, 3])
    }

    /// A replica shut down under a stream: the stream ends with UNAVAILABLE naming the way back; the
    /// client subscribes to the other replica from its last position and gets what was sent meanwhile,
    /// with no gap and nothing twice.
    func testAStreamCutByAReplicasShutdownResumesOnTheOtherWithoutAGap() async throws {
        let (fixture, other) = try await start()
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        let first = StreamCollector()
        let listening = Task { await first.run(other, user: designer) }
        for index in 1...3 { _ = try await fixture.send(customer, room, "before \(index)") }
        let before = try await eventually(timeout: 10) { first.realEvents.count >= 4 }
        XCTAssertTrue(before)
        // The second replica goes away (as a deployment's rolling restart does).
        if let second {
            try await second.service.stop()
            await listening.value
            second.client.beginGracefulShutdown()
            await second.task.value
            self.second = nil
        }
        XCTAssertEqual(first.end?.code, .unavailable)
        XCTAssertTrue(first.end?.message.contains("after_position") == true, first.end?.message ?? "")
        for index in 1...3 { _ = try await fixture.send(customer, room, "meanwhile \(index)") }
        let resumed = StreamCollector()
        await resumed.run(fixture.chat, user: designer, after: first.lastPosition, stopAfter: 3)
        let positions = (first.realEvents + resumed.realEvents).map(\.position)
        XCTAssertEqual(positions, Array(1...7), "the room, three messages before and three after: no gap, none twice")
    }

    /// Issue 31's fan-out across replicas: 200 subscribers on the second replica, 10,000 messages over 100
    /// rooms written elsewhere (every tenth by SendMessage on the first replica, the rest by a store on a
    /// pool of its own, as a third replica's sends): each subscriber gets exactly its rooms' events, in
    /// order, with no gap and nothing twice. Then 20 of them resume on the first replica from the middle
    /// of what they got: the rest, nothing twice.
    func testTwoHundredSubscribersGetTenThousandMessagesSentThroughOtherReplicasInOrder() async throws {
        let (fixture, _) = try await start()
        let secondPort = try await XCTUnwrap(second).service.port
        // 200 subscribers on the second replica, over 4 connections.
        var clients: [(client: RPCClient, task: Task<Void, Never>)] = []
        for _ in 0..<4 {
            let client = try RPCClient(configuration: fixture.harness.clientConfiguration(port: secondPort))
            clients.append((client, Task { await client.run() }))
        }
        let scenario = try await FanOutScenario.start(fixture, subscribingThrough: clients.map(\.client))
        try await database.withSecondPool { pool in
            let store = PostgresChatStore(postgres: pool)
            try await scenario.send(fixture) { _ = try await store.appendMessage($0) }
        }
        try await scenario.verifyAll(timeout: 180)

        // Resumed on the first replica from the middle: the rest of the same events, nothing twice. Every
        // tenth user: customers with two rooms, customers with none, designers with one.
        for (index, (user, collector)) in zip(scenario.users, scenario.collectors).enumerated() where index % 10 == 0 {
            let got = collector.realEvents
            guard got.count > 2 else { continue }
            let (middle, resumed) = (got.count / 2, StreamCollector())
            let reading = Task {
                await resumed.run(
                    fixture.chat, user: user, after: got[middle].position, stopAfter: got.count - middle - 1)
            }
            let rest = try await eventually(timeout: 20) { resumed.realEvents.count >= got.count - middle - 1 }
            reading.cancel()
            await reading.value
            XCTAssertTrue(rest, "resumed \(user.id): \(resumed.realEvents.count) of \(got.count - middle - 1)")
            XCTAssertEqual(
                resumed.realEvents.map(\.position), got[(middle + 1)...].map(\.position), "resumed \(user.id)")
        }
        for (client, task) in clients {
            client.beginGracefulShutdown()
            await task.value
        }
    }

    /// A send whose transaction commits late is delivered, not skipped. A trigger holds the designer's
    /// first message open for 1.5 s after it took its positions; meanwhile another customer's message to
    /// the same designer goes through the other replica. That one waits for the recipient's head row, so
    /// it comes after, and the designer's stream on the second replica gets both, in order, with no gap.
    /// (Positions from a sequence would let the second commit first at a higher position: a reader woken
    /// by it would move past the first, which commits later, and never read it.)
    func testASendThatCommitsLateIsDeliveredNotSkipped() async throws {
        let (fixture, other) = try await start()
        let designer = try await fixture.signUp(.designer)
        let (slowCustomer, fastCustomer) = (try await fixture.signUp(.customer), try await fixture.signUp(.customer))
        let slowRoom = try await fixture.openRoomID(slowCustomer, designer)
        let fastRoom = try await fixture.openRoomID(fastCustomer, designer)
        try await database.postgres.write { tx in
            try await tx.query(
                """
                CREATE FUNCTION test_commit_late() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF EXISTS (SELECT 1 FROM chat_message WHERE room_id = NEW.room_id AND seq = NEW.seq AND text = 'slow')
                    THEN PERFORM pg_sleep(0.75);  -- once per recipient's row: 1.5 s for the two
                    END IF;
                    RETURN NEW;
                END $$
                """)
            try await tx.query(
                """
                CREATE TRIGGER test_commit_late AFTER INSERT ON chat_event
                FOR EACH ROW WHEN (NEW.kind = 'message') EXECUTE FUNCTION test_commit_late()
                """)
        }
        let listener = StreamCollector()
        let listening = Task { await listener.run(other, user: designer, stopAfter: 4) }
        let caughtUp = try await eventually(timeout: 10) { listener.caughtUp }
        XCTAssertTrue(caughtUp)
        let started = ContinuousClock.now
        let slow = Task { try await fixture.send(slowCustomer, slowRoom, "slow") }
        // Once the trigger sleeps, the slow send holds its positions (the designer's head row included).
        let holding = try await eventually(timeout: 10) { try await self.sleepingInTheTrigger() }
        XCTAssertTrue(holding, "the slow send never reached the trigger")
        _ = try await other.sendMessage(
            .init(roomID: fastRoom, body: .text(.init(text: "fast"))),
            options: fastCustomer.options(timeout: .seconds(10)))
        _ = try await slow.value
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .seconds(1), "the trigger held the slow send open")
        let all = try await eventually(timeout: 10) { listener.realEvents.count >= 4 }
        listening.cancel()
        await listening.value
        XCTAssertTrue(all, "the stream got \(listener.realEvents.count) of 4 events: one was skipped")
        let texts = listener.realEvents.compactMap { event -> String? in
            if case .messageAdded(let added)? = event.event, case .text(let text)? = added.message?.body {
                return text.text
            }
            return nil
        }
        XCTAssertEqual(texts, ["slow", "fast"], "the fast send waited for the slow one's commit")
        XCTAssertEqual(listener.realEvents.map(\.position), [1, 2, 3, 4], "two rooms, then both messages: no gap")
    }

    func testAPurgeThroughOneReplicaEndsTheUsersStreamsOnTheOther() async throws {
        let (fixture, other) = try await start()
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        _ = try await fixture.openRoomID(customer, designer)
        let listener = StreamCollector()
        let listening = Task { await listener.run(other, user: customer) }
        let caughtUp = try await eventually(timeout: 10) { listener.caughtUp }
        XCTAssertTrue(caughtUp)
        _ = try await fixture.asService("account") { try await $0.purgeUser(.init(userID: customer.id)) }
        let ended = try await eventually(timeout: 10) { listener.ended }
        XCTAssertTrue(ended, "the stream on the other replica is still open")
        XCTAssertEqual(listener.end?.code, .unauthenticated)
        listening.cancel()
        await listening.value
    }

    /// Presence across replicas (`PostgresStreamPresence`): Bo listens on the second replica, so a message
    /// Ana sends through the first comes by his stream and queues no push; once his stream is closed, the
    /// next one does. (Each replica knowing only its own streams pushed to Bo while he was listening.)
    func testAMatchRoomMemberListeningOnTheOtherReplicaGetsNoPush() async throws {
        let (fixture, other) = try await start(apps: ServiceHarness.repositoryApps)
        let ana = try await fixture.slpMember("slp-ana")
        let bo = try await fixture.slpMember("slp-bo", device: "bo-phone")
        try await fixture.openMatchRoom(ana, bo)
        let listener = StreamCollector()
        let listening = Task { await listener.run(other, user: bo) }
        let caughtUp = try await eventually(timeout: 10) { listener.caughtUp }
        XCTAssertTrue(caughtUp)
        let listed = try await eventually(timeout: 10) { try await self.listed().contains("slp-bo") }
        XCTAssertTrue(listed, "the second replica lists Bo as listening there")

        let first = try await fixture.send(ana, "m-1", "도서관 앞에서 봬요")
        let streamed = try await eventually(timeout: 10) {
            listener.realEvents.contains {
                if case .messageAdded(let added)? = $0.event { added.message?.id == first.id } else { false }
            }
        }
        XCTAssertTrue(streamed, "Bo's stream on the other replica brought the message")
        // Bo answers, and Ana, with no stream anywhere, gets a push; once ChatService's outbox is empty,
        // a push for Bo would have been delivered too.
        _ = try await fixture.send(bo, "m-1", "네")
        let anaPushed = try await eventually(timeout: 20) { try await fixture.pushes(to: "slp-ana") == 1 }
        XCTAssertTrue(anaPushed, "Ana has no stream: her push went through")
        let drained = try await eventually(timeout: 20) { try await self.queuedJobs() == 0 }
        XCTAssertTrue(drained)
        let boPushes = try await fixture.pushes(to: "slp-bo")
        XCTAssertEqual(boPushes, 0, "Bo was listening on the other replica: no push")

        // His stream closed, the second replica takes him off its list, and the next message is pushed.
        listening.cancel()
        await listening.value
        let unlisted = try await eventually(timeout: 10) { try await !self.listed().contains("slp-bo") }
        XCTAssertTrue(unlisted, "the second replica still lists Bo")
        _ = try await fixture.send(ana, "m-1", "5분 늦어요")
        let boPushed = try await eventually(timeout: 20) { try await fixture.pushes(to: "slp-bo") == 1 }
        XCTAssertTrue(boPushed, "Bo has no stream anywhere now: a push")
    }

    /// Whether a backend of the test's database is in the late-commit trigger's `pg_sleep`.
    private func sleepingInTheTrigger() async throws -> Bool {
        try await database.postgres.read { connection in
            try await connection.query(
                """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event = 'PgSleep'
                """, logger: Logger(label: "test")
            ).collect().first?.decode(Int.self) ?? 0 > 0
        }
    }

    /// The users some replica lists as listening.
    private func listed() async throws -> [String] {
        try await database.postgres.read { connection in
            try await connection.query("SELECT user_id FROM chat_presence", logger: Logger(label: "test"))
                .collect().map { try $0.decode(String.self) }
        }
    }

    /// ChatService's outbox jobs not yet delivered.
    private func queuedJobs() async throws -> Int {
        try await database.postgres.read { connection in
            try await connection.query("SELECT count(*) FROM runtime_outbox", logger: Logger(label: "test"))
                .collect().first?.decode(Int.self) ?? -1
        }
    }
}
