import Foundation
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// WatchPromise over TLS: a snapshot, then fixes and arrivals (each arrival once, in rank order), a
/// reconnect from the last position missing nothing, and the stream ending at T + 3 h.
/// (Not final: `ZipadooPromiseStreamOnPostgresTests` runs the same watch on PostgreSQL.)
class ZipadooPromiseStreamTests: XCTestCase {
    var fixture: ZipadooPromiseFixture!
    let minute: Int64 = 60_000

    /// The service under test; on SQLite here.
    func startFixture() async throws -> ZipadooPromiseFixture {
        try await ZipadooPromiseFixture.start()
    }

    override func setUp() async throws {
        fixture = try await startFixture()
    }

    override func tearDown() async throws {
        try await fixture?.stop()
    }

    func testZipadooWatchersSeeEachArrivalOnceInRankOrderResumeWithoutGapsAndEndAtTheClose() async throws {
        let t = fixture.now + 2 * 60 * minute
        let promise = try await fixture.create(by: "ana", with: ["bo", "cy", "dan"], at: t)
        let client = fixture.promises
        let ana = try fixture.member("ana")
        let id = promise.id
        await assertRefusedBeforeTheWindow(client, id, ana)
        fixture.clock.set(Date(timeIntervalSince1970: Double(t - 20 * minute) / 1_000))
        _ = try await fixture.report("bo", id, metres: 900)

        // First watcher: snapshot, caught up, then reads until bo's arrival and goes away.
        let firstCaughtUp = LockedValue(false)
        let first = Task { () throws -> [YediZipadoo.PromiseEvent] in
            try await client.watchPromise(.init(promiseID: id), options: ana) { stream in
                var seen: [YediZipadoo.PromiseEvent] = []
                for try await event in stream {
                    seen.append(event)
                    if case .caughtUp = event.event { firstCaughtUp.withLock { $0 = true } }
                    if case .arrived(let position) = event.event, position.userID == "bo" { break }
                }
                return seen
            }
        }
        try await waitFor(firstCaughtUp)
        fixture.clock.advance(by: 2)
        _ = try await fixture.report("cy", id, metres: 500)
        fixture.clock.advance(by: 2)
        _ = try await fixture.report("bo", id, metres: 3)  // bo arrives: rank 1
        let before = try await first.value
        guard case .snapshot(let snapshot) = before.first?.event else { return XCTFail("no snapshot first: \(before)") }
        XCTAssertEqual(snapshot.positions.map(\.userID), ["ana", "bo", "cy", "dan"])
        XCTAssertEqual(snapshot.positions.first { $0.userID == "bo" }?.hasFix, true)
        XCTAssertTrue(before.contains { if case .caughtUp = $0.event { true } else { false } })
        let last = before.last!.position
        // Meanwhile (nobody watching): more fixes and two more arrivals.
        fixture.clock.advance(by: 2)
        _ = try await fixture.report("cy", id, metres: 0)  // rank 2
        fixture.clock.advance(by: 2)
        _ = try await fixture.report("dan", id, metres: 200)

        // Second watcher from the last position: the missed events, then live ones, then the end.
        let secondCaughtUp = LockedValue(false)
        let second = Task { () throws -> [YediZipadoo.PromiseEvent] in
            try await client.watchPromise(.init(promiseID: id, afterPosition: last), options: ana) { stream in
                var seen: [YediZipadoo.PromiseEvent] = []
                for try await event in stream {
                    seen.append(event)
                    if case .caughtUp = event.event { secondCaughtUp.withLock { $0 = true } }
                }
                return seen
            }
        }
        try await waitFor(secondCaughtUp)
        fixture.clock.advance(by: 2)
        _ = try await fixture.report("dan", id, metres: 10)  // rank 3
        fixture.clock.advance(by: 2)
        _ = try await fixture.report("ana", id, metres: 20)  // rank 4
        fixture.clock.set(Date(timeIntervalSince1970: Double(t + 180 * minute) / 1_000))
        let after = try await second.value
        guard case .trackingEnded = after.last?.event else { return XCTFail("the stream did not end: \(after)") }
        let all = before + after
        let positions = all.filter {
            if case .snapshot = $0.event { return false }
            if case .caughtUp = $0.event { return false }
            return true
        }.map(\.position)
        XCTAssertEqual(positions, positions.sorted(), "in position order")
        XCTAssertEqual(Set(positions).count, positions.count, "no event twice")
        let arrivals = all.compactMap { event -> YediZipadoo.Position? in
            if case .arrived(let position) = event.event { return position }
            return nil
        }
        XCTAssertEqual(arrivals.map(\.userID), ["bo", "cy", "dan", "ana"])
        XCTAssertEqual(arrivals.map(\.rank), [1, 2, 3, 4])
        let moves = all.filter { if case .moved = $0.event { true } else { false } }.count
        XCTAssertEqual(moves, 2, "cy's first fix and dan's first fix (bo's came before the snapshot)")
    }

    private func assertRefusedBeforeTheWindow(
        _ client: YediZipadoo.Promises.Client, _ id: String, _ options: CallOptions
    ) async {
        let (code, _) = await ZipadooPromiseFixture.status {
            try await client.watchPromise(.init(promiseID: id), options: options) { stream in
                for try await _ in stream {}
            }
        }
        XCTAssertEqual(code, .failedPrecondition)
        let stranger = try! fixture.member("zed")
        let (strangerCode, _) = await ZipadooPromiseFixture.status {
            try await client.watchPromise(.init(promiseID: id), options: stranger) { stream in
                for try await _ in stream {}
            }
        }
        XCTAssertEqual(strangerCode, .notFound)
    }

    private func waitFor(_ flag: LockedValue<Bool>) async throws {
        let deadline = Date().addingTimeInterval(10)
        while !flag.value {
            guard Date() < deadline else { return XCTFail("the watcher never caught up") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// Every `Promises` method on the real handlers, with an empty request, as a member, anonymously and
/// with a service certificate: a real status each (never UNIMPLEMENTED, UNKNOWN or INTERNAL).
final class ZipadooPromisesRealStatusTests: XCTestCase {
    func testZipadooEveryPromisesMethodAnswersARealStatus() async throws {
        let fixture = try await ZipadooPromiseFixture.start()
        let member = try fixture.member("ana")
        let (service, run) = try await fixture.serviceClient("account")
        var answers: [String: StatusCode] = [:]
        for method in YediZipadoo.Promises.descriptor.methods {
            for (caller, client, options) in [
                ("member", fixture.client, member), ("anonymous", fixture.client, CallOptions.defaults),
                ("service", service, CallOptions.defaults),
            ] {
                let code = await ZipadooPromiseFixture.status {
                    switch method.kind {
                    case .unary: _ = try await client.unary(method, payload: [], options: options)
                    case .serverStreaming:
                        try await client.serverStreaming(method, payload: [], options: options) { stream in
                            for try await _ in stream {}
                        }
                    }
                }.0
                answers["\(method.method) \(caller)"] = code
                XCTAssertFalse(
                    [.unimplemented, .unknown, .internalError].contains(code), "\(method.method) as \(caller): \(code)")
            }
        }
        XCTAssertEqual(answers["GetStats member"], .ok)
        XCTAssertEqual(answers["GetPromise member"], .invalidArgument)
        XCTAssertEqual(answers["GetPromise anonymous"], .unauthenticated)
        service.beginGracefulShutdown()
        await run.value
        try await fixture.stop()
    }
}
