import Foundation
import Logging
import PostgresNIO
import PostgresTestSupport
import ServiceLifecycleTestKit
import ServiceTestSupport
import XCTest

@testable import ChatService
@testable import ServiceRuntime

/// Who listens where, across replicas (`PostgresStreamPresence`): two replicas' presences, each with its
/// own hub and pool, on one database.
final class PostgresStreamPresenceTests: XCTestCase {
    private var database: TestDatabase!

    override func setUp() async throws {
        database = try await TestDatabase(
            service: "chat", migrations: RuntimePostgresSchema.migrations + ChatPostgresSchema.migrations)
    }

    override func tearDown() async throws {
        try await database?.close()
    }

    /// Replica "a" (this test's first pool) and "b" (a second pool), both running; `body` gets a's hub and
    /// both presences.
    private func withReplicas(
        lease: Duration = PostgresStreamPresence.defaultLease,
        _ body: (ChatEventHub, PostgresStreamPresence, PostgresStreamPresence) async throws -> Void
    ) async throws {
        let logger = Logger(label: "presence-test")
        try await database.withSecondPool { second in
            let hub = ChatEventHub()
            let a = PostgresStreamPresence(
                postgres: database.postgres, replica: "a", hub: hub, logger: logger, lease: lease)
            let b = PostgresStreamPresence(postgres: second, replica: "b", hub: ChatEventHub(), logger: logger)
            let running = [Task { try await a.run() }, Task { try await b.run() }]
            defer { for task in running { task.cancel() } }
            try await body(hub, a, b)
        }
    }

    private func rows(_ sql: String) async throws -> [PostgresRow] {
        try await database.postgres.read { connection in
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Logger(label: "presence-test")).collect()
        }
    }

    func testPresenceAStreamOnOneReplicaCountsOnTheOtherUntilItCloses() async throws {
        try await withReplicas { hub, a, b in
            let subscription = try hub.subscribe(key: "u1")
            let local = await a.withOpenStreams(among: ["u1", "u2"])
            XCTAssertEqual(local, ["u1"], "its own replica knows at once, from its hub")
            let seen = try await eventually(timeout: 10) { try await b.listedElsewhere(among: ["u1", "u2"]) == ["u1"] }
            XCTAssertTrue(seen, "the other replica sees u1 listening, and u2 not")
            // A second device of the same user changes nothing; closing both takes u1 off the list.
            let second = try hub.subscribe(key: "u1")
            hub.unsubscribe(subscription)
            try await Task.sleep(for: .milliseconds(300))
            let stillSeen = try await b.listedElsewhere(among: ["u1"])
            XCTAssertEqual(stillSeen, ["u1"], "one device still listens")
            hub.unsubscribe(second)
            let gone = try await eventually(timeout: 10) { try await b.listedElsewhere(among: ["u1"]).isEmpty }
            XCTAssertTrue(gone, "u1's streams are closed")
        }
    }

    /// Only a replica whose lease holds is believed (replica "c" is written by hand: a replica that died
    /// with u9 listed); a live replica renews its lease while its users listen.
    func testPresenceOnlyAReplicaWhoseLeaseHoldsCountsAndALiveOneRenewsIt() async throws {
        try await withReplicas(lease: .seconds(3)) { hub, _, b in
            _ = try await rows(
                "INSERT INTO chat_presence_replica VALUES ('c', clock_timestamp() - interval '1 second')")
            _ = try await rows("INSERT INTO chat_presence VALUES ('u9', 'c')")
            let expired = try await b.listedElsewhere(among: ["u9"])
            XCTAssertEqual(expired, [], "a replica past its lease is not believed")
            _ = try await rows(
                "UPDATE chat_presence_replica SET alive_until = clock_timestamp() + interval '1 hour' WHERE replica = 'c'"
            )
            let current = try await b.listedElsewhere(among: ["u9"])
            XCTAssertEqual(current, ["u9"], "the same row under a lease that holds")

            let subscription = try hub.subscribe(key: "u1")
            defer { hub.unsubscribe(subscription) }
            let seen = try await eventually(timeout: 10) { try await b.listedElsewhere(among: ["u1"]) == ["u1"] }
            XCTAssertTrue(seen)
            try await Task.sleep(for: .seconds(4))
            let renewed = try await b.listedElsewhere(among: ["u1"])
            XCTAssertEqual(renewed, ["u1"], "4 s after its first write, a's 3-second lease was renewed")
        }
    }

    /// What a previous life of a replica listed goes at its start; then, with nobody listening, it writes
    /// nothing (an idle replica stays idle).
    func testPresenceAReplicaStartingAgainDropsWhatItListedBeforeAndIdlesWithoutWriting() async throws {
        _ = try await rows("INSERT INTO chat_presence_replica VALUES ('a', clock_timestamp() + interval '1 hour')")
        _ = try await rows("INSERT INTO chat_presence VALUES ('ghost', 'a')")
        try await withReplicas(lease: .milliseconds(600)) { _, _, _ in
            let dropped = try await eventually(timeout: 10) {
                try await self.rows("SELECT 1 FROM chat_presence WHERE user_id = 'ghost'").isEmpty
            }
            XCTAssertTrue(dropped, "the ghost row of a's last life is deleted")
            let before = try await rows("SELECT alive_until::text FROM chat_presence_replica WHERE replica = 'a'")
                .map { try $0.decode(String.self) }
            try await Task.sleep(for: .seconds(1))
            let after = try await rows("SELECT alive_until::text FROM chat_presence_replica WHERE replica = 'a'")
                .map { try $0.decode(String.self) }
            XCTAssertEqual(after, before, "nobody listens on a: no renewal written in five renewal periods")
        }
    }

    /// Shut down gracefully, a replica takes its users off at once, not when its lease would end.
    func testPresenceAReplicaShutDownIsForgottenAtOnce() async throws {
        let logger = Logger(label: "presence-test")
        let hub = ChatEventHub()
        // `@concurrent`, as `testGracefulShutdown`'s body is, which shares this closure's state.
        try await database.withSecondPool { @concurrent second in
            let b = PostgresStreamPresence(postgres: second, replica: "b", hub: ChatEventHub(), logger: logger)
            try await testGracefulShutdown { trigger in
                let a = PostgresStreamPresence(
                    postgres: database.postgres, replica: "a", hub: hub, logger: logger, lease: .seconds(60))
                let running = Task { try await a.run() }
                _ = try hub.subscribe(key: "u1")
                let seen = try await eventually(timeout: 10) { try await b.listedElsewhere(among: ["u1"]) == ["u1"] }
                XCTAssertTrue(seen)
                trigger.triggerGracefulShutdown()
                try await running.value
            }
            let forgotten = try await b.listedElsewhere(among: ["u1"])
            XCTAssertEqual(forgotten, [], "a went away with its 60-second lease unspent")
        }
    }
}
