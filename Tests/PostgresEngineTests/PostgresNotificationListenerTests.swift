import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresTestSupport
import ServiceTestSupport
import XCTest

@testable import ServiceRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// `PostgresNotificationListener` against a real PostgreSQL: payloads arrive; a connection taken away
/// is replaced and `listening` runs again (so its owner re-reads); away longer than `lostAfter`, `lost`
/// runs once and the replica reports trouble (NOT_SERVING) until it listens again.
final class PostgresNotificationListenerTests: XCTestCase {
    private final class Calls: Sendable {
        private let state = NIOLockedValueBox((payloads: [String](), listening: 0, lost: 0))
        var payloads: [String] { state.withLockedValue { $0.payloads } }
        var listening: Int { state.withLockedValue { $0.listening } }
        var lost: Int { state.withLockedValue { $0.lost } }

        func listener(_ postgres: ServicePostgres, lostAfter: Duration) -> PostgresNotificationListener {
            PostgresNotificationListener(
                postgres: postgres, channel: "test_events", logger: Logger(label: "test.listener"),
                lostAfter: lostAfter,
                received: { payload in self.state.withLockedValue { $0.payloads.append(payload) } },
                listening: { self.state.withLockedValue { $0.listening += 1 } },
                lost: { self.state.withLockedValue { $0.lost += 1 } })
        }
    }

    private func notify(_ postgres: ServicePostgres, _ payload: String) async throws {
        try await postgres.write { tx in try await tx.query("SELECT pg_notify('test_events', \(payload))") }
    }

    private func terminateListeners(_ database: String) async throws {
        try await TestPostgres.administer(
            """
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = '\(database)' AND application_name = 'yedi-listener'
            """)
    }

    /// A listener with `lostAfter` on a fresh database, listening once `body` starts; `cleanUp` runs also
    /// when `body` throws (undoing what it did to the server).
    private func withListener(
        lostAfter: Duration, cleanUp: @escaping () async -> Void = {},
        body: (TestDatabase, Calls) async throws -> Void
    ) async throws {
        let database = try await TestDatabase()
        let calls = Calls()
        let listener = calls.listener(database.postgres, lostAfter: lostAfter)
        let running = Task { try await listener.run() }
        var failure: (any Error)?
        do {
            let listening = try await eventually(timeout: 10) { calls.listening == 1 }
            XCTAssertTrue(listening)
            try await body(database, calls)
        } catch {
            failure = error
        }
        await cleanUp()
        running.cancel()
        _ = await running.result
        try await database.close()
        if let failure { throw failure }
    }

    func testAListenerLosesNothingItCouldHearAndIsToldToReReadAfterReconnecting() async throws {
        try await withListener(lostAfter: .seconds(30)) { database, calls in
            try await notify(database.postgres, "one")
            let heard = try await eventually(timeout: 10) { calls.payloads == ["one"] }
            XCTAssertTrue(heard, "\(calls.payloads)")

            try await terminateListeners(database.settings.database)
            let again = try await eventually(timeout: 10) { calls.listening == 2 }
            XCTAssertTrue(again, "listening again after its connection was terminated")
            try await notify(database.postgres, "two")
            let heardAgain = try await eventually(timeout: 10) { calls.payloads == ["one", "two"] }
            XCTAssertTrue(heardAgain, "\(calls.payloads)")
            XCTAssertEqual(calls.lost, 0, "a short absence is not a loss")
            XCTAssertNil(database.postgres.trouble)
        }
    }

    func testAListenerAwayLongerThanItsLimitIsLostOnceAndReportsTroubleUntilItIsBack() async throws {
        let name = NIOLockedValueBox("")
        try await withListener(
            lostAfter: .milliseconds(500),
            cleanUp: {
                try? await TestPostgres.administer(
                    "ALTER DATABASE \(name.withLockedValue { $0 }) ALLOW_CONNECTIONS true")
            },
            body: { database, calls in
                name.withLockedValue { $0 = database.settings.database }
                try await TestPostgres.administer(
                    "ALTER DATABASE \(database.settings.database) ALLOW_CONNECTIONS false")
                try await terminateListeners(database.settings.database)
                let lost = try await eventually(timeout: 10) { calls.lost == 1 }
                XCTAssertTrue(lost, "told of the loss")
                XCTAssertNotNil(database.postgres.trouble, "the replica reports trouble (NOT_SERVING)")
                try await Task.sleep(for: .seconds(1))
                XCTAssertEqual(calls.lost, 1, "told once")

                try await TestPostgres.administer("ALTER DATABASE \(database.settings.database) ALLOW_CONNECTIONS true")
                let back = try await eventually(timeout: 10) { calls.listening == 2 }
                XCTAssertTrue(back, "listening again once connections are allowed")
                XCTAssertNil(database.postgres.trouble, "trouble cleared")
            })
    }

    /// A listening connection whose server stops answering without closing it (its backend stopped, as a
    /// vanished peer looks): the heartbeat notices, closes it and listens again on a new one.
    func testAListeningConnectionThatStopsAnsweringIsReplaced() async throws {
        let stopped = NIOLockedValueBox<Int32?>(nil)
        try await withListener(
            lostAfter: .seconds(1),
            cleanUp: { if let pid = stopped.withLockedValue({ $0 }) { _ = kill(pid, SIGCONT) } },
            body: { database, calls in
                let pid = try await database.postgres.read { connection in
                    try await connection.query(
                        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'yedi-listener'",
                        logger: Logger(label: "test")
                    ).collect().first?.decode(Int32.self)
                }
                let listenerPID = try XCTUnwrap(pid)
                stopped.withLockedValue { $0 = listenerPID }
                // The backend runs as PostgreSQL's user: only root (as CI runs) may stop it.
                guard kill(listenerPID, SIGSTOP) == 0 else {
                    stopped.withLockedValue { $0 = nil }
                    throw XCTSkip("cannot stop PostgreSQL's backend \(listenerPID) (errno \(errno)): run as root")
                }
                let again = try await eventually(timeout: 10) { calls.listening == 2 }
                XCTAssertTrue(again, "a silent connection was never replaced")
                _ = kill(listenerPID, SIGCONT)
                try await notify(database.postgres, "after")
                let heard = try await eventually(timeout: 10) { calls.payloads == ["after"] }
                XCTAssertTrue(heard, "\(calls.payloads)")
            })
    }
}
