import Foundation
import GRDB
import RPCAccess
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// Zipadoo's `Promises` over TLS on the fixture's manual clock: every rule at its edges (title 15/16,
/// now + 29/30 min, the window's edges ± 1 s, 29.9/30.1 m, arrival at T + 59/60 s), who may change a
/// promise, settlement with its ledger, and deletion.
final class ZipadooPromiseTests: XCTestCase {
    var fixture: ZipadooPromiseFixture!
    let minute: Int64 = 60_000
    let second: Int64 = 1_000

    override func setUp() async throws {
        fixture = try await ZipadooPromiseFixture.start()
    }

    override func tearDown() async throws {
        try await fixture?.stop()
    }

    var promises: YediZipadoo.Promises.Client { fixture.promises }

    func assertCount(
        _ sql: String, _ arguments: StatementArguments = [], _ expected: Int, _ message: String = "",
        file: StaticString = #filePath, line: UInt = #line
    ) async throws {
        let got = try await fixture.count(sql, arguments)
        XCTAssertEqual(got, expected, message, file: file, line: line)
    }

    func assertCount(
        _ sql: String, _ expected: Int, _ message: String = "", file: StaticString = #filePath, line: UInt = #line
    ) async throws {
        try await assertCount(sql, [], expected, message, file: file, line: line)
    }

    func assertRefused(
        _ code: StatusCode, _ field: String = "", file: StaticString = #filePath, line: UInt = #line,
        _ call: () async throws -> some Any
    ) async {
        let (got, message) = await ZipadooPromiseFixture.status(call)
        XCTAssertEqual(got, code, message, file: file, line: line)
        XCTAssertTrue(message.hasPrefix(field), "\"\(message)\" names \(field)", file: file, line: line)
    }

    func request(
        title: String = "점심", at: Int64, fee: Int32 = 100, participants: [String] = [], clientID: String? = nil,
        place: YediZipadoo.Place = ZipadooPromiseFixture.place
    ) -> YediZipadoo.CreatePromiseRequest {
        .init(
            clientID: clientID ?? UUID().uuidString, title: title, atMs: at, place: place, fee: fee,
            participantIDs: participants)
    }

    func testZipadooCreatePromiseChecksEachFieldAtItsEdges() async throws {
        let ana = try fixture.member("ana")
        let at = fixture.now + 2 * 60 * minute
        fixture.friends.befriend("ana", "bo")
        await assertRefused(.invalidArgument, "title") {
            try await promises.createPromise(request(title: "   ", at: at), options: ana)
        }
        await assertRefused(.invalidArgument, "title") {
            try await promises.createPromise(request(title: String(repeating: "약", count: 16), at: at), options: ana)
        }
        let fifteen = try await promises.createPromise(
            request(title: " " + String(repeating: "약", count: 15) + " ", at: at), options: ana)
        XCTAssertEqual(fifteen.title.count, 15)
        await assertRefused(.failedPrecondition, "at_ms") {
            try await promises.createPromise(request(at: fixture.now + 29 * minute), options: ana)
        }
        await assertRefused(.failedPrecondition, "at_ms") {
            try await promises.createPromise(request(at: fixture.now - minute), options: ana)
        }
        let thirty = try await promises.createPromise(request(at: fixture.now + 30 * minute), options: ana)
        XCTAssertEqual(thirty.window, .tracking, "at exactly T − 30 min tracking opens")
        await assertRefused(.invalidArgument, "fee") {
            try await promises.createPromise(request(at: at, fee: 600), options: ana)
        }
        for fee: Int32 in [0, 500, 1_000, 5_000] {
            _ = try await promises.createPromise(request(at: at, fee: fee), options: ana)
        }
        await assertRefused(.invalidArgument, "participant_ids") {
            try await promises.createPromise(request(at: at, participants: (1...21).map { "p\($0)" }), options: ana)
        }
        await assertRefused(.invalidArgument, "participant_ids") {
            try await promises.createPromise(request(at: at, participants: ["bo", "bo"]), options: ana)
        }
        await assertRefused(.invalidArgument, "participant_ids") {
            try await promises.createPromise(request(at: at, participants: ["ana"]), options: ana)
        }
        await assertRefused(.invalidArgument, "client_id") {
            try await promises.createPromise(request(at: at, clientID: "not-a-uuid"), options: ana)
        }
        for (field, place) in [
            ("place.latitude", YediZipadoo.Place(name: "x", latitude: 90.0001, longitude: 0)),
            ("place.longitude", YediZipadoo.Place(name: "x", latitude: 0, longitude: -180.0001)),
            ("place.latitude", YediZipadoo.Place(name: "x", latitude: .nan, longitude: 0)),
            ("place.name", YediZipadoo.Place(name: "", latitude: 0, longitude: 0)),
        ] {
            await assertRefused(.invalidArgument, field) {
                try await promises.createPromise(request(at: at, place: place), options: ana)
            }
        }
        let (notFriend, message) = await ZipadooPromiseFixture.status {
            try await promises.createPromise(request(at: at, participants: ["bo", "cy"]), options: ana)
        }
        XCTAssertEqual(notFriend, .failedPrecondition)
        XCTAssertTrue(message.contains("cy"), message)
        fixture.friends.down = true
        let before = try await fixture.count("SELECT COUNT(*) FROM promise")
        await assertRefused(.unavailable) {
            try await promises.createPromise(request(at: at, participants: ["bo"]), options: ana)
        }
        let after = try await fixture.count("SELECT COUNT(*) FROM promise")
        XCTAssertEqual(before, after, "nothing unchecked is stored")
        fixture.friends.down = false
        // A retry with the client id answers the same promise.
        let clientID = UUID().uuidString
        let first = try await promises.createPromise(
            request(at: at, participants: ["bo"], clientID: clientID), options: ana)
        let retry = try await promises.createPromise(
            request(at: at, participants: ["bo"], clientID: clientID), options: ana)
        XCTAssertEqual(first.id, retry.id)
        XCTAssertEqual(first.participants.map(\.userID), ["ana", "bo"])
        try await assertCount(
            "SELECT COUNT(*) FROM runtime_scheduled_job WHERE subject = ? AND due_at_ms = ?",
            [first.id, at + 180 * minute], 1, "the settlement job is written with the promise")
    }

    func testZipadooOnlyTheCreatorChangesAndOnlyBeforeTrackingOpens() async throws {
        let at = fixture.now + 2 * 60 * minute
        let promise = try await fixture.create(by: "ana", with: ["bo", "cy"], at: at)
        fixture.friends.befriend("ana", "dan")
        let ana = try fixture.member("ana")
        let bo = try fixture.member("bo")
        let stranger = try fixture.member("zed")
        for call in [
            { try await self.promises.getPromise(.init(promiseID: promise.id), options: stranger) as Any },
            { try await self.promises.deletePromise(.init(promiseID: promise.id), options: stranger) as Any },
            { try await self.promises.leavePromise(.init(promiseID: promise.id), options: stranger) as Any },
        ] {
            await assertRefused(.notFound, "promise_id") { try await call() }
        }
        var edit = YediZipadoo.UpdatePromiseRequest(
            promiseID: promise.id, title: "저녁", atMs: at + 60 * minute, place: ZipadooPromiseFixture.place, fee: 200,
            participantIDs: ["bo", "dan"])
        await assertRefused(.permissionDenied, "promise_id") { try await promises.updatePromise(edit, options: bo) }
        await assertRefused(.notFound, "promise_id") { try await promises.updatePromise(edit, options: stranger) }
        let boRowBefore = try await fixture.count(
            "SELECT position FROM promise_participant WHERE promise_id = ? AND user_id = 'bo'", [promise.id])
        let updated = try await promises.updatePromise(edit, options: ana)
        XCTAssertEqual(updated.participants.map(\.userID), ["ana", "bo", "dan"])
        XCTAssertEqual(updated.fee, 200)
        let boRowAfter = try await fixture.count(
            "SELECT position FROM promise_participant WHERE promise_id = ? AND user_id = 'bo'", [promise.id])
        XCTAssertEqual(boRowBefore, boRowAfter, "a staying participant keeps their row")
        let cyRows = try await fixture.count(
            "SELECT COUNT(*) FROM promise_participant WHERE promise_id = ? AND user_id = 'cy'", [promise.id])
        XCTAssertEqual(cyRows, 0)
        let moved = try await fixture.count(
            "SELECT COUNT(*) FROM runtime_scheduled_job WHERE subject = ? AND due_at_ms = ?",
            [promise.id, at + 60 * minute + 180 * minute])
        XCTAssertEqual(moved, 1, "the settlement job moves with the promise")
        let newAt = at + 60 * minute
        // One second before T − 30 min: still changeable; at T − 30 min: not.
        fixture.clock.set(Date(timeIntervalSince1970: Double(newAt - 30 * minute - second) / 1_000))
        edit.atMs = fixture.now + 30 * minute
        await assertRefused(.failedPrecondition, "at_ms") {
            var early = edit
            early.atMs = fixture.now + 29 * minute
            return try await promises.updatePromise(early, options: ana)
        }
        edit.atMs = newAt
        _ = try await promises.updatePromise(edit, options: ana)
        fixture.clock.advance(by: 1)
        await assertRefused(.failedPrecondition, "promise_id") { try await promises.updatePromise(edit, options: ana) }
        await assertRefused(.failedPrecondition, "promise_id") {
            try await promises.leavePromise(.init(promiseID: promise.id), options: bo)
        }
        await assertRefused(.failedPrecondition, "promise_id") {
            try await promises.deletePromise(.init(promiseID: promise.id), options: ana)
        }
    }

    func testZipadooLeaveAndDeleteBeforeTracking() async throws {
        let at = fixture.now + 2 * 60 * minute
        let promise = try await fixture.create(by: "ana", with: ["bo"], at: at)
        let ana = try fixture.member("ana")
        let bo = try fixture.member("bo")
        await assertRefused(.failedPrecondition, "promise_id") {
            try await promises.leavePromise(.init(promiseID: promise.id), options: ana)
        }
        _ = try await promises.leavePromise(.init(promiseID: promise.id), options: bo)
        await assertRefused(.notFound, "promise_id") {
            try await promises.getPromise(.init(promiseID: promise.id), options: bo)
        }
        _ = try await promises.deletePromise(.init(promiseID: promise.id), options: ana)
        let rows = try await fixture.count("SELECT COUNT(*) FROM promise_participant")
        let jobs = try await fixture.count("SELECT COUNT(*) FROM runtime_scheduled_job WHERE subject = ?", [promise.id])
        XCTAssertEqual(rows, 0)
        XCTAssertEqual(jobs, 0, "deleting drops the settlement job")
    }

    func testZipadooListsByWindowAndTheWidgetsNextPromise() async throws {
        let ana = try fixture.member("ana")
        let start = fixture.now
        let soon = try await fixture.create(by: "ana", at: start + 40 * minute, title: "soon")
        let later = try await fixture.create(by: "ana", at: start + 5 * 60 * minute, title: "later")
        let other = try await fixture.create(by: "bo", at: start + 50 * minute, title: "bo's")
        _ = other
        var upcoming = try await promises.listPromises(.init(window: .upcoming), options: ana)
        XCTAssertEqual(upcoming.promises.map(\.id), [soon.id, later.id])
        fixture.clock.advance(by: 10 * 60)
        let tracking = try await promises.listPromises(.init(window: .tracking), options: ana)
        XCTAssertEqual(tracking.promises.map(\.id), [soon.id])
        upcoming = try await promises.listPromises(.init(window: .upcoming), options: ana)
        XCTAssertEqual(upcoming.promises.map(\.id), [later.id])
        let next = try await promises.getNextPromise(.init(), options: ana)
        XCTAssertEqual(next.promise?.id, soon.id)
        // Past: 55 settled promises; the latest 50 in 5 pages of 10, latest first.
        for index in 0..<55 {
            _ = try await fixture.create(by: "ana", at: fixture.now + 30 * minute + Int64(index) * second)
        }
        fixture.clock.advance(by: 24 * 3_600)
        var seen: [YediZipadoo.Promise] = []
        var cursor = ""
        var pages = 0
        repeat {
            let page = try await promises.listPromises(
                .init(window: .past, page: .init(cursor: cursor)), options: ana)
            seen += page.promises
            cursor = page.page?.nextCursor ?? ""
            pages += 1
            XCTAssertLessThanOrEqual(page.promises.count, 10)
        } while !cursor.isEmpty && pages < 10
        XCTAssertEqual(pages, 5)
        XCTAssertEqual(seen.count, 50)
        XCTAssertEqual(seen.map(\.atMs), seen.map(\.atMs).sorted(by: >))
        XCTAssertTrue(seen.allSatisfy { $0.settledAtMs > 0 }, "reading past promises settles them")
        let none = try await promises.getNextPromise(.init(), options: ana)
        XCTAssertFalse(none.found)
    }

    func testZipadooPositionsOnlyInsideTheWindowAndAtMostOneASecond() async throws {
        let t = fixture.now + 2 * 60 * minute
        let promise = try await fixture.create(by: "ana", with: ["bo"], at: t)
        func at(_ ms: Int64) { fixture.clock.set(Date(timeIntervalSince1970: Double(ms) / 1_000)) }
        at(t - 30 * minute - second)
        await assertRefused(.failedPrecondition, "promise_id") {
            try await fixture.report("bo", promise.id, metres: 500)
        }
        await assertRefused(.failedPrecondition, "promise_id") {
            try await promises.listPositions(.init(promiseID: promise.id), options: try fixture.member("bo"))
        }
        at(t - 30 * minute)
        _ = try await fixture.report("bo", promise.id, metres: 500)
        await assertRefused(.resourceExhausted) { try await fixture.report("bo", promise.id, metres: 400) }
        fixture.clock.advance(by: 0.999)
        await assertRefused(.resourceExhausted) { try await fixture.report("bo", promise.id, metres: 400) }
        fixture.clock.advance(by: 0.001)
        let second = try await fixture.report("bo", promise.id, metres: 400)
        XCTAssertFalse(second.arrived)
        XCTAssertEqual(second.distanceM, 400, accuracy: 0.01)
        XCTAssertEqual(second.fee, 100)
        await assertRefused(.notFound, "promise_id") { try await fixture.report("zed", promise.id, metres: 1) }
        let positions = try await promises.listPositions(
            .init(promiseID: promise.id), options: try fixture.member("ana"))
        XCTAssertEqual(positions.positions.map(\.userID), ["ana", "bo"])
        XCTAssertEqual(positions.positions.map(\.hasFix), [false, true], "only the latest fix, none for ana yet")
        await assertRefused(.invalidArgument, "latitude") {
            try await promises.reportPosition(
                .init(promiseID: promise.id, latitude: 91, longitude: 0), options: try fixture.member("bo"))
        }
        at(t + 180 * minute - 1_000)
        _ = try await fixture.report("ana", promise.id, metres: 1_000)
        at(t + 180 * minute)
        await assertRefused(.failedPrecondition, "promise_id") { try await fixture.report("bo", promise.id, metres: 1) }
    }

    func testZipadooArrivalWithin30MetresAtTheServersTimeAndFinal() async throws {
        let t = fixture.now + 2 * 60 * minute
        let promise = try await fixture.create(by: "ana", with: ["bo", "cy", "dan"], at: t, fee: 300)
        fixture.clock.set(Date(timeIntervalSince1970: Double(t - 10 * minute) / 1_000))
        let far = try await fixture.report("ana", promise.id, metres: 30.1)
        XCTAssertFalse(far.arrived)
        fixture.clock.advance(by: 1)
        let near = try await fixture.report("ana", promise.id, metres: 29.9)
        XCTAssertTrue(near.arrived)
        XCTAssertEqual(near.rank, 1)
        XCTAssertEqual(near.secondsLate, -(10 * 60 - 1))
        XCTAssertEqual(near.arrivedAtMs, fixture.now)
        fixture.clock.advance(by: 5)
        let after = try await fixture.report("ana", promise.id, metres: 5_000)
        XCTAssertTrue(after.arrived, "arrival is final")
        XCTAssertEqual(after.rank, 1)
        XCTAssertEqual(after.arrivedAtMs, near.arrivedAtMs)
        // bo at T + 59 s is on time, cy at T + 60 s late, dan never arrives.
        fixture.clock.set(Date(timeIntervalSince1970: Double(t + 59 * second) / 1_000))
        let bo = try await fixture.report("bo", promise.id, metres: 0)
        XCTAssertEqual(bo.rank, 2)
        XCTAssertEqual(bo.secondsLate, 59)
        fixture.clock.set(Date(timeIntervalSince1970: Double(t + 60 * second) / 1_000))
        let cy = try await fixture.report("cy", promise.id, metres: 30)
        XCTAssertEqual(cy.rank, 3)
        // Settled at T + 3 h by the scheduler's worker.
        fixture.clock.set(Date(timeIntervalSince1970: Double(t + 180 * minute) / 1_000))
        try await fixture.waitFor("SELECT COUNT(*) FROM promise WHERE settled_at_ms IS NOT NULL", 1)
        let settled = try await promises.getPromise(.init(promiseID: promise.id), options: try fixture.member("ana"))
        let results = Dictionary(uniqueKeysWithValues: settled.participants.map { ($0.userID, $0) })
        XCTAssertEqual(results["ana"]?.result, .onTime)
        XCTAssertEqual(results["bo"]?.result, .onTime)
        XCTAssertEqual(results["cy"]?.result, .late)
        XCTAssertEqual(results["dan"]?.result, .neverArrived)
        // Two latecomers × 300 shared by two on time: 150 each from each.
        XCTAssertEqual(results["ana"]?.potatoes, 300)
        XCTAssertEqual(results["bo"]?.potatoes, 300)
        XCTAssertEqual(results["cy"]?.potatoes, -300)
        XCTAssertEqual(results["dan"]?.potatoes, -300)
        let stats = try await promises.getStats(.init(), options: try fixture.member("dan"))
        XCTAssertEqual(stats.stats.first?.completed, 1)
        XCTAssertEqual(stats.stats.first?.late, 1)
        XCTAssertEqual(stats.stats.first?.balance, -300, "balances may go negative")
        XCTAssertEqual(stats.stats.first?.results.first?.result, .neverArrived)
        let erased = try await fixture.count("SELECT COUNT(*) FROM promise_participant WHERE latitude IS NOT NULL")
        XCTAssertEqual(erased, 0, "positions are erased at settlement")
        try await assertCount("SELECT COALESCE(SUM(amount), 0) FROM potato_entry", 0, "the ledger sums to 0")
    }

    func testZipadooRemaindersGoOneEachInRankOrder() async throws {
        // 3 latecomers × 100 shared by 7 on time: 14 each from each, the 2 left one each to ranks 1 and 2.
        let t = fixture.now + 2 * 60 * minute
        let others = (1...9).map { "p\($0)" }
        let promise = try await fixture.create(by: "ana", with: others, at: t, fee: 100)
        let onTime = ["p3", "ana", "p1", "p5", "p2", "p7", "p4"]
        fixture.clock.set(Date(timeIntervalSince1970: Double(t - 20 * minute) / 1_000))
        for user in onTime {
            _ = try await fixture.report(user, promise.id, metres: 1)
            fixture.clock.advance(by: 1)
        }
        fixture.clock.set(Date(timeIntervalSince1970: Double(t + 2 * 60 * minute) / 1_000))
        _ = try await fixture.report("p6", promise.id, metres: 1)
        fixture.clock.set(Date(timeIntervalSince1970: Double(t + 180 * minute + 5 * second) / 1_000))
        let settled = try await promises.getPromise(.init(promiseID: promise.id), options: try fixture.member("ana"))
        let potatoes = Dictionary(uniqueKeysWithValues: settled.participants.map { ($0.userID, $0.potatoes) })
        XCTAssertEqual(potatoes["p3"], 45)
        XCTAssertEqual(potatoes["ana"], 45)
        for user in ["p1", "p5", "p2", "p7", "p4"] { XCTAssertEqual(potatoes[user], 42, user) }
        for user in ["p6", "p8", "p9"] { XCTAssertEqual(potatoes[user], -100, user) }
        let entries = try await fixture.count("SELECT COUNT(*) FROM potato_entry")
        XCTAssertEqual(entries, 3 * 7 * 2, "every move is a pair of entries")
        try await assertCount("SELECT COALESCE(SUM(amount), 0) FROM potato_entry", 0, "the ledger sums to 0")
    }

    func testZipadooNobodyOnTimeMovesNothing() async throws {
        let t = fixture.now + 2 * 60 * minute
        let promise = try await fixture.create(by: "ana", with: ["bo"], at: t, fee: 5_000)
        fixture.clock.set(Date(timeIntervalSince1970: Double(t + 61 * second) / 1_000))
        _ = try await fixture.report("bo", promise.id, metres: 0)
        fixture.clock.set(Date(timeIntervalSince1970: Double(t + 180 * minute) / 1_000))
        let stats = try await promises.getStats(.init(), options: try fixture.member("ana"))
        XCTAssertEqual(stats.stats.first?.late, 1)
        XCTAssertEqual(stats.stats.first?.balance, 0)
        try await assertCount("SELECT COUNT(*) FROM potato_entry", 0)
    }

    func testZipadooSettlementByTheWorkerAnd100ConcurrentReadsSettlesOnce() async throws {
        let t = fixture.now + 2 * 60 * minute
        let promise = try await fixture.create(by: "ana", with: ["bo", "cy"], at: t, fee: 100)
        fixture.clock.set(Date(timeIntervalSince1970: Double(t - minute) / 1_000))
        _ = try await fixture.report("ana", promise.id, metres: 0)
        let client = promises
        let options = try fixture.member("bo")
        fixture.clock.set(Date(timeIntervalSince1970: Double(t + 180 * minute) / 1_000))
        let codes = await withTaskGroup(of: StatusCode.self) { group in
            for _ in 0..<100 {
                group.addTask {
                    await ZipadooPromiseFixture.status {
                        try await client.getPromise(.init(promiseID: promise.id), options: options)
                    }.0
                }
            }
            var all: [StatusCode] = []
            for await code in group { all.append(code) }
            return all
        }
        XCTAssertEqual(codes.filter { $0 == .ok }.count, 100, "\(Set(codes))")
        try await fixture.waitFor("SELECT COUNT(*) FROM runtime_scheduled_job", 0)
        let completed = try await fixture.count("SELECT SUM(completed) FROM promise_member_stats")
        XCTAssertEqual(completed, 3, "settled once: one completion per participant")
        try await assertCount("SELECT SUM(late) FROM promise_member_stats", 2)
        try await assertCount("SELECT COUNT(*) FROM potato_entry", 4)
    }

    func testZipadoo50ParticipantsArrivingInTheSameSecondGetRanks1To50() async throws {
        // The app allows 21; the store takes any number, which is what the race needs.
        let t = fixture.now + 2 * 60 * minute
        let users = (1...50).map { "u\($0)" }
        let store = SQLitePromiseStore(database: fixture.database, scheduler: fixture.service.environment.scheduler)
        let promise = try await store.create(
            PromiseRecord(
                id: "race", creatorID: users[0], clientID: UUID().uuidString.lowercased(), title: "race",
                atMilliseconds: t,
                place: PlaceRecord(
                    name: "시청", address: "", latitude: ZipadooPromiseFixture.cityHall.latitude,
                    longitude: ZipadooPromiseFixture.cityHall.longitude),
                fee: 0, createdAtMilliseconds: fixture.now),
            participantIDs: Array(users.dropFirst()))
        fixture.clock.set(Date(timeIntervalSince1970: Double(t) / 1_000))
        var options: [String: CallOptions] = [:]
        for user in users { options[user] = try fixture.member(user) }
        let client = promises
        let point = ZipadooPromiseFixture.north(of: ZipadooPromiseFixture.cityHall, metres: 10)
        let ranks = try await withThrowingTaskGroup(of: Int32.self) { group in
            for user in users {
                let caller = options[user]!
                group.addTask {
                    try await client.reportPosition(
                        .init(promiseID: promise.id, latitude: point.latitude, longitude: point.longitude),
                        options: caller
                    ).rank
                }
            }
            var all: [Int32] = []
            for try await rank in group { all.append(rank) }
            return all
        }
        XCTAssertEqual(ranks.sorted(), Array(1...50))
    }

    func testZipadooStatsRateAndDepthOnHalfOpenBands() async throws {
        XCTAssertEqual(PromiseRules.depth(completed: 0, late: 0).0, .newbie)
        XCTAssertEqual(PromiseRules.depth(completed: 3, late: 3).0, .innerCore)
        // 30.5 % late: kept 69.5 → upper mantle (the original app's integer bands dropped it to the worst).
        XCTAssertEqual(PromiseRules.depth(completed: 200, late: 61).0, .upperMantle)
        XCTAssertEqual(PromiseRules.depth(completed: 200, late: 61).1, "어중간지각쟁이")
        XCTAssertEqual(PromiseRules.depth(completed: 100, late: 30).0, .upperMantle, "k = 70 is ≤ 70")
        XCTAssertEqual(PromiseRules.depth(completed: 1_000, late: 299).0, .crust, "k = 70.1")
        XCTAssertEqual(PromiseRules.depth(completed: 100, late: 70).0, .outerCore)
        XCTAssertEqual(PromiseRules.depth(completed: 1_000, late: 699).0, .lowerMantle, "k = 30.1")
        XCTAssertEqual(PromiseRules.depth(completed: 100, late: 10).0, .surface)
        XCTAssertEqual(PromiseRules.depth(completed: 100, late: 5).0, .troposphere)
        XCTAssertEqual(PromiseRules.depth(completed: 100, late: 4).0, .stratosphere)
        XCTAssertEqual(PromiseRules.depth(completed: 100, late: 0).0, .stratosphere)
        // Over the RPC: a friend's counters, a stranger's refused.
        fixture.friends.befriend("ana", "bo")
        let stats = try await promises.getStats(.init(userIDs: ["ana", "bo"]), options: try fixture.member("ana"))
        XCTAssertEqual(stats.stats.map(\.depth), [.newbie, .newbie])
        await assertRefused(.notFound, "user_ids") {
            try await promises.getStats(.init(userIDs: ["zed"]), options: try fixture.member("ana"))
        }
    }

    func testZipadooPurgeUserRemovesTheirPromisesAndKeepsTheLedgerAtZero() async throws {
        let t = fixture.now + 2 * 60 * minute
        let mine = try await fixture.create(by: "ana", with: ["bo"], at: t + 10 * minute, fee: 100)
        let theirs = try await fixture.create(by: "bo", with: ["ana", "cy"], at: t, fee: 200)
        fixture.clock.set(Date(timeIntervalSince1970: Double(t - minute) / 1_000))
        _ = try await fixture.report("bo", theirs.id, metres: 0)
        fixture.clock.set(Date(timeIntervalSince1970: Double(t + 181 * minute) / 1_000))
        _ = try await promises.getStats(.init(), options: try fixture.member("ana"))
        let anaEntries = try await fixture.count("SELECT COUNT(*) FROM potato_entry WHERE user_id = 'ana'")
        XCTAssertGreaterThan(anaEntries, 0)
        let (client, run) = try await fixture.serviceClient("account")
        _ = try await YediBooking.BookingService.Client(client).purgeUser(.init(userID: "ana"))
        client.beginGracefulShutdown()
        await run.value
        try await assertCount("SELECT COUNT(*) FROM promise WHERE id = ?", [mine.id], 0)
        try await assertCount("SELECT COUNT(*) FROM runtime_scheduled_job WHERE subject = ?", [mine.id], 0)
        try await assertCount("SELECT COUNT(*) FROM promise_participant WHERE promise_id = ?", [theirs.id], 2)
        let named = try await fixture.count(
            """
            SELECT (SELECT COUNT(*) FROM potato_entry WHERE user_id = 'ana' OR counterparty_id = 'ana')
                + (SELECT COUNT(*) FROM promise_participant WHERE user_id = 'ana')
                + (SELECT COUNT(*) FROM promise_member_stats WHERE user_id = 'ana')
                + (SELECT COUNT(*) FROM promise WHERE creator_id = 'ana')
            """)
        XCTAssertEqual(named, 0, "no row names the deleted member")
        try await assertCount("SELECT COUNT(*) FROM potato_entry WHERE user_id IS NULL", 1)
        try await assertCount("SELECT COALESCE(SUM(amount), 0) FROM potato_entry", 0, "the ledger sums to 0")
    }

    func testZipadooOtherAppsTokensAreRefusedAndZipadoosReachNoYediMethod() async throws {
        let customer = try fixture.member("c1", app: .yedi, role: .customer)
        await assertRefused(.permissionDenied) {
            try await promises.listPromises(.init(window: .upcoming), options: customer)
        }
        await assertRefused(.unauthenticated) { try await promises.listPromises(.init(window: .upcoming)) }
        let zipadoo = try fixture.member("ana")
        await assertRefused(.permissionDenied) {
            try await YediBooking.BookingService.Client(fixture.client).getMenu(
                YediBooking.GetMenuRequest(designerID: "d1"), options: zipadoo)
        }
    }

    func testZipadooRemindsEveryParticipantWhenTrackingOpensAndFollowsEdits() async throws {
        let t = fixture.now + 2 * 60 * minute
        let promise = try await fixture.create(by: "ana", with: ["bo"], at: t, title: "점심")
        let moved = t + 60 * minute
        _ = try await promises.updatePromise(
            .init(
                promiseID: promise.id, title: "저녁", atMs: moved, place: ZipadooPromiseFixture.place, fee: 100,
                participantIDs: ["bo"]), options: try fixture.member("ana"))
        let deleted = try await fixture.create(by: "ana", at: t, title: "취소")
        _ = try await promises.deletePromise(.init(promiseID: deleted.id), options: try fixture.member("ana"))
        // The old time's reminder instant passes: nothing (the job moved with the promise).
        fixture.clock.set(Date(timeIntervalSince1970: Double(t - 30 * minute) / 1_000))
        try await Task.sleep(for: .milliseconds(300))
        XCTAssertEqual(fixture.friends.notified.value.count, 0)
        fixture.clock.set(Date(timeIntervalSince1970: Double(moved - 30 * minute - second) / 1_000))
        try await Task.sleep(for: .milliseconds(300))
        XCTAssertEqual(fixture.friends.notified.value.count, 0, "one second early")
        fixture.clock.advance(by: 1)
        let deadline = Date().addingTimeInterval(10)
        while fixture.friends.notified.value.count < 2, Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let notified = fixture.friends.notified.value
        XCTAssertEqual(Set(notified.map(\.userID)), ["ana", "bo"])
        XCTAssertEqual(Set(notified.map(\.title)), ["저녁 30분 전입니다"])
        XCTAssertEqual(Set(notified.map(\.app)), ["zipadoo"])
    }
}
