import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import ChatService

/// The rooms quota, and the pruning of old stream events with a clear answer to a resume from before it.
final class ChatRetentionTests: XCTestCase {
    /// A token for `user` valid on the fixture's (moved) clock.
    private func renewed(_ fixture: ChatFixture, _ user: ChatFixture.User, _ role: UserRole) throws -> ChatFixture.User
    {
        ChatFixture.User(
            id: user.id, token: try fixture.harness.token(user: user.id, role: role, now: fixture.clock.now),
            name: user.name)
    }

    /// 20 concurrent OpenRoom calls by one customer (20 designers) with `rooms.day=5`: exactly 5 rooms;
    /// an existing room is still answered; the next Seoul day allows more.
    func testConcurrentOpensNeverPassTheDailyRoomQuota() async throws {
        let fixture = try await ChatFixture.start(quotas: ["rooms.day=5"])
        let customer = try await fixture.signUp(.customer)
        var designers: [ChatFixture.User] = []
        for _ in 0..<21 { designers.append(try await fixture.signUp(.designer)) }
        let chat = fixture.chat
        let outcomes = await withTaskGroup(of: (StatusCode, String).self) { group in
            for designer in designers.prefix(20) {
                group.addTask {
                    do {
                        _ = try await chat.openRoom(.init(designerID: designer.id), options: customer.options)
                        return (.ok, "")
                    } catch let error as RPCError {
                        return (error.code, error.message)
                    } catch {
                        return (.unknown, "\(error)")
                    }
                }
            }
            var all: [(StatusCode, String)] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        XCTAssertEqual(outcomes.filter { $0.0 == .ok }.count, 5, "\(outcomes)")
        for (code, message) in outcomes where code != .ok {
            XCTAssertEqual(code, .resourceExhausted)
            XCTAssertEqual(message, "quota rooms.day: at most 5 chat rooms opened per day")
        }
        let rooms = try await fixture.service.environment.database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM chat_room") ?? 0
        }
        XCTAssertEqual(rooms, 5)
        // Opening a room that exists is not a new room.
        let existing = try await fixture.service.environment.database.read { db in
            try String.fetchOne(db, sql: "SELECT user_id FROM chat_room_member WHERE role = 'designer' LIMIT 1") ?? ""
        }
        _ = try await chat.openRoom(.init(designerID: existing), options: customer.options)
        // Midnight in Seoul starts a new day.
        let now = Int64(fixture.clock.now.timeIntervalSince1970 * 1_000)
        fixture.clock.set(Date(timeIntervalSince1970: Double(QuotaDay.start(of: now) + 86_400_000) / 1_000))
        _ = try await chat.openRoom(
            .init(designerID: designers[20].id), options: try renewed(fixture, customer, .customer).options)
        try await fixture.stop()
    }

    /// Events older than the retention (7 days) are pruned on the manual clock; a subscriber that had
    /// seen them resumes as before; one that had not is told OUT_OF_RANGE (reload), never a silent gap.
    /// Messages themselves stay in the history.
    func testPrunedEventsAndResumingFromBeforeThem() async throws {
        let fixture = try await ChatFixture.start()
        var customer = try await fixture.signUp(.customer)
        var designer = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        let chat = fixture.chat
        let seen = StreamCollector()
        let subscriber = customer
        let reader = Task { await seen.run(chat, user: subscriber, stopAfter: 4) }
        for index in 1...3 { try await fixture.send(designer, room, "old \(index)") }
        await reader.value
        XCTAssertEqual(seen.realEvents.count, 4)
        let stale = seen.realEvents[0].position  // a device that saw only the room being created
        let current = seen.lastPosition

        let job = ChatServiceDefinition.eventPruning(fixture.service.environment, store: fixture.store)
        fixture.clock.advance(by: 6 * 86_400)
        let early = await job.runOnce()
        XCTAssertEqual(early, 0, "pruned within the retention")

        fixture.clock.advance(by: 86_400 + 3_600)
        customer = try renewed(fixture, customer, .customer)
        designer = try renewed(fixture, designer, .designer)
        for index in 4...5 { try await fixture.send(designer, room, "new \(index)") }
        let removed = await job.runOnce()
        XCTAssertEqual(removed, 8, "room created and 3 messages, for each of the two members")

        let resumed = StreamCollector()
        await resumed.run(chat, user: customer, after: current, stopAfter: 2)
        XCTAssertNil(resumed.end)
        let seqs = resumed.realEvents.compactMap { event -> Int64? in
            if case .messageAdded(let added)? = event.event { return added.message?.seq }
            return nil
        }
        XCTAssertEqual(seqs, [4, 5])

        let behind = StreamCollector()
        await behind.run(chat, user: customer, after: stale)
        XCTAssertEqual(behind.end?.code, .outOfRange)
        XCTAssertTrue(behind.end?.message.contains("pruned") ?? false, "\(String(describing: behind.end))")
        XCTAssertTrue(behind.realEvents.isEmpty, "events were sent before the refusal")

        let history = try await chat.listMessages(.init(roomID: room, limit: 100), options: customer.options)
        XCTAssertEqual(history.messages.count, 5)
        try await fixture.stop()
    }
}
