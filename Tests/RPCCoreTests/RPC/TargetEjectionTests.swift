import RPCTLS
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// A target (replica) that answers `UNAVAILABLE` three times in a row leaves the client's rotation for a
/// backoff that grows with each further failure, and comes back after it; a retry goes to another target;
/// a lone target is used even while ejected. The state machine first (no sockets, the time passed in),
/// then the client over two real servers.
final class TargetEjectionTests: XCTestCase {
    private let sick = ClientConfiguration.Target(host: "10.0.0.1", port: 7001)
    private let well = ClientConfiguration.Target(host: "10.0.0.2", port: 7001)
    private let backoff = Backoff(initial: .seconds(1), multiplier: 2, maximum: .seconds(8), jitter: 0)

    func testAnUnavailableTargetIsEjectedForABackoffThatGrowsAndResetsOnAnotherAnswer() {
        var ejection = TargetEjection(backoff: backoff, threshold: 3)
        let start = ContinuousClock.now
        XCTAssertFalse(ejection.isEjected(sick, now: start))
        XCTAssertTrue(ejection.isEmpty)

        XCTAssertNil(ejection.recordUnavailable(sick, now: start, random: 0.5))
        XCTAssertNil(ejection.recordUnavailable(sick, now: start, random: 0.5))
        XCTAssertFalse(ejection.isEjected(sick, now: start), "twice is not yet several times")
        XCTAssertFalse(ejection.isEmpty)
        XCTAssertEqual(ejection.recordUnavailable(sick, now: start, random: 0.5), .seconds(1))
        XCTAssertTrue(ejection.isEjected(sick, now: start + .milliseconds(999)))
        XCTAssertFalse(ejection.isEjected(sick, now: start + .seconds(1)), "back once the backoff has passed")
        XCTAssertFalse(ejection.isEjected(well, now: start), "only the target that failed")

        // Failing again at once (its first call after coming back): twice as long, up to the maximum.
        XCTAssertEqual(ejection.recordUnavailable(sick, now: start + .seconds(1), random: 0.5), .seconds(2))
        XCTAssertTrue(ejection.isEjected(sick, now: start + .milliseconds(2_999)))
        // Calls that were in flight when it went out, failing meanwhile, do not keep it out longer (a
        // replica killed under load answers them all at once: they used to push it to the maximum).
        for _ in 0..<10 {
            XCTAssertNil(ejection.recordUnavailable(sick, now: start + .seconds(2), random: 0.5))
        }
        XCTAssertFalse(ejection.isEjected(sick, now: start + .seconds(3)), "back after its 2 s, as before")
        XCTAssertEqual(ejection.recordUnavailable(sick, now: start + .seconds(3), random: 0.5), .seconds(4))
        XCTAssertEqual(ejection.recordUnavailable(sick, now: start + .seconds(7), random: 0.5), .seconds(8))
        XCTAssertEqual(ejection.recordUnavailable(sick, now: start + .seconds(15), random: 0.5), .seconds(8))

        // Any other answer puts it back and starts the count over.
        ejection.recordAnswer(sick)
        XCTAssertFalse(ejection.isEjected(sick, now: start))
        XCTAssertTrue(ejection.isEmpty)
        XCTAssertNil(ejection.recordUnavailable(sick, now: start, random: 0.5))

        // A target that failed and was never called again (it went away) is forgotten after the longest
        // backoff, so the pool goes back to its lock-free path.
        ejection.forgetStale(now: start + .seconds(7))
        XCTAssertFalse(ejection.isEmpty)
        ejection.forgetStale(now: start + .seconds(8))
        XCTAssertTrue(ejection.isEmpty)
        XCTAssertEqual(ejection.recordUnavailable(well, now: start, random: 0.5), nil)
        XCTAssertEqual(ejection.ejectedTargets(now: start), [])
    }

    /// One replica answers every call `UNAVAILABLE`: each idempotent call it fails is retried on the other
    /// one (not on its own second connection), and after its third failure calls go to the other one only, so a call that may not be retried
    /// no longer fails every second time, as plain round robin gave.
    func testCallsAvoidAReplicaThatAnswersUnavailable() async throws {
        let pki = try TestPKI.get()
        let sickService = EchoTestService(unavailable: true)
        let wellService = EchoTestService()
        let sickServer = try await RunningServer.start(pki: pki, services: [sickService])
        let wellServer = try await RunningServer.start(pki: pki, services: [wellService])
        let configuration = pki.rpcClientConfiguration(ports: [sickServer.port, wellServer.port]) { configuration in
            configuration.ejectionBackoff = Backoff(initial: .seconds(60), maximum: .seconds(60), jitter: 0)
            // Two connections to each: plain round robin would retry on the sick replica's second one.
            configuration.connectionsPerTarget = 2
            configuration.maxAttempts = 2
            configuration.retryBackoff = Backoff(initial: .milliseconds(1), maximum: .milliseconds(2))
        }
        var refused = 0
        try await withRPCClient(configuration: configuration) { client in
            let echo = YediEcho.Echo.Client(client)
            let ready = await eventually { client.readyConnectionCount == 4 }
            XCTAssertTrue(ready)
            for index in 0..<20 { _ = try await echo.echo(.init(text: "idempotent \(index)")) }
            for index in 0..<20 {
                do {
                    _ = try await echo.echo(.init(text: "once \(index)"), options: .init(retry: false))
                } catch let error as RPCError where error.code == .unavailable {
                    refused += 1
                }
            }
        }
        XCTAssertEqual(sickService.probe.startedCalls.count, 3, "\(sickService.probe.startedCalls)")
        XCTAssertEqual(wellService.probe.startedCalls.count, 40, "every call was answered there (three retried)")
        XCTAssertEqual(refused, 0, "the sick replica was ejected by the idempotent calls before these began")
        await sickServer.stop()
        await wellServer.stop()
    }

    /// After its backoff the replica gets calls again; once it answers, it is in the rotation as before.
    func testAnEjectedReplicaIsTriedAgainAfterItsBackoffAndStaysWhenItAnswers() async throws {
        let pki = try TestPKI.get()
        let sickService = EchoTestService(unavailable: true)
        let wellService = EchoTestService()
        let sickServer = try await RunningServer.start(pki: pki, services: [sickService])
        let wellServer = try await RunningServer.start(pki: pki, services: [wellService])
        let configuration = pki.rpcClientConfiguration(ports: [sickServer.port, wellServer.port]) { configuration in
            // The first ten calls must end within the backoff, or the replica is back among them: a second
            // leaves a slow machine (a sanitizer build) room that 300 ms did not.
            configuration.ejectionBackoff = Backoff(initial: .seconds(1), maximum: .seconds(60), jitter: 0)
            configuration.retryBackoff = Backoff(initial: .milliseconds(1), maximum: .milliseconds(2))
        }
        try await withRPCClient(configuration: configuration) { client in
            let echo = YediEcho.Echo.Client(client)
            let ready = await eventually { client.readyConnectionCount == 2 }
            XCTAssertTrue(ready)
            for index in 0..<10 { _ = try await echo.echo(.init(text: "a\(index)")) }
            XCTAssertEqual(sickService.probe.startedCalls.count, 3, "ejected after its third answer in a row")

            sickService.unavailable.withLockedValue { $0 = false }
            try await Task.sleep(for: .milliseconds(1_100))
            for index in 0..<10 { _ = try await echo.echo(.init(text: "b\(index)")) }
            let afterBackoff = sickService.probe.startedCalls.filter { $0.hasPrefix("b") }.count
            XCTAssertEqual(afterBackoff, 5, "back in the round robin: every second call")
        }
        await sickServer.stop()
        await wellServer.stop()
    }

    /// With one target, ejection never stands between a call and the only server there is.
    func testALoneTargetIsCalledEvenWhileEjected() async throws {
        let pki = try TestPKI.get()
        let sickService = EchoTestService(unavailable: true)
        let server = try await RunningServer.start(pki: pki, services: [sickService])
        let configuration = pki.rpcClientConfiguration(ports: [server.port]) { configuration in
            configuration.ejectionBackoff = Backoff(initial: .seconds(60), maximum: .seconds(60), jitter: 0)
        }
        try await withRPCClient(configuration: configuration) { client in
            let echo = YediEcho.Echo.Client(client)
            for index in 0..<5 {
                let code = await rpcStatusCode {
                    _ = try await echo.echo(.init(text: "lone \(index)"), options: .init(retry: false))
                }
                XCTAssertEqual(code, .unavailable)
            }
        }
        XCTAssertEqual(sickService.probe.startedCalls.count, 5, "every call reached the server, ejected or not")
        await server.stop()
    }
}

/// The status code `body` failed with (`.ok` if it did not fail).
private func rpcStatusCode(_ body: () async throws -> Void) async -> StatusCode {
    do {
        try await body()
        return .ok
    } catch let error as RPCError {
        return error.code
    } catch {
        return .unknown
    }
}
