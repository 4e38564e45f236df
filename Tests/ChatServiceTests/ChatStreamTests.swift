import Foundation
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import ChatService

/// The live stream over real TLS: fan-out to many subscribers, resuming without gap or duplicate (also
/// across a restart), cutting off a subscriber that never reads, and graceful shutdown.
final class ChatStreamTests: XCTestCase {
    func testTwoHundredSubscribersSeeExactlyTheirRoomsEventsInOrder() async throws {
        let fixture = try await ChatFixture.start(inMemoryDisk: true)
        // 200 subscribers over 4 connections (50 calls each).
        var clients: [(client: RPCClient, task: Task<Void, Never>)] = []
        for _ in 0..<4 { clients.append(try await fixture.makeClient()) }
        let scenario = try await FanOutScenario.start(fixture, subscribingThrough: clients.map(\.client))
        XCTAssertEqual(fixture.hub.subscriptionCount, 200)
        let store = fixture.liveStore
        try await scenario.send(fixture) { _ = try await store.appendMessage($0) }
        try await scenario.verifyAll(timeout: 60)
        for (client, task) in clients {
            client.beginGracefulShutdown()
            await task.value
        }
        try await fixture.stop()
    }

    func testResumingFromTheLastPositionMissesNothingAndRepeatsNothing() async throws {
        let fixture = try await ChatFixture.start()
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        let chat = fixture.chat

        // The customer's device reads 1 room-created + 10 messages, then drops off.
        let first = StreamCollector()
        let reader = Task { await first.run(chat, user: customer, stopAfter: 11) }
        for index in 1...10 { try await fixture.send(designer, room, "live \(index)") }
        await reader.value
        XCTAssertEqual(first.realEvents.count, 11)
        // While it is away: messages, and read receipts (a distinct kind, never a message).
        for index in 11...20 { try await fixture.send(designer, room, "missed \(index)") }
        _ = try await chat.markRead(.init(roomID: room, upToSeq: 15), options: designer.options)
        _ = try await chat.markRead(.init(roomID: room, upToSeq: 12), options: customer.options)

        let second = StreamCollector()
        let resumed = Task { await second.run(chat, user: customer, after: first.lastPosition, stopAfter: 12 + 5) }
        let caughtUp = try await eventually(timeout: 10) { second.caughtUp }
        XCTAssertTrue(caughtUp)
        for index in 21...25 { try await fixture.send(designer, room, "after \(index)") }
        await resumed.value
        let all = first.realEvents + second.realEvents
        XCTAssertEqual(all.map(\.position), all.map(\.position).sorted())
        XCTAssertEqual(Set(all.map(\.position)).count, all.count, "a duplicate after resuming")
        let seqs = all.compactMap { event -> Int64? in
            if case .messageAdded(let added)? = event.event { return added.message?.seq }
            return nil
        }
        XCTAssertEqual(seqs, Array(1...25))
        let receipts = all.compactMap { event -> YediChat.ReadCursorMoved? in
            if case .readCursorMoved(let moved)? = event.event { return moved }
            return nil
        }
        XCTAssertEqual(receipts.map(\.readerID), [designer.id, customer.id])
        XCTAssertEqual(receipts.map(\.readSeq), [15, 12])
        // A position never given out is refused (it would hide live events).
        let future = StreamCollector()
        await future.run(chat, user: customer, after: 1_000_000)
        XCTAssertEqual(future.end?.code, .outOfRange)
        // The CaughtUp marker came after the stored events and before the live ones.
        let marker = try XCTUnwrap(second.events.firstIndex { if case .caughtUp? = $0.event { true } else { false } })
        XCTAssertEqual(marker, 12)
        try await fixture.stop()
    }

    func testResubscribingWhileMessagesFlowNeverLosesOrRepeatsOne() async throws {
        // The race between reading stored events and live delivery: every reconnection happens while
        // messages are being committed.
        let fixture = try await ChatFixture.start()
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        let total = 300
        let sender = Task {
            for index in 1...total { try await fixture.send(customer, room, "flow \(index)") }
        }
        var seqs: [Int64] = []
        var positions: [Int64] = []
        var last: Int64 = 0
        var reconnections = 0
        while seqs.count < total {
            let collector = StreamCollector()
            // At most what is still to come (the room-created event first), so the last one returns.
            let remaining = total - seqs.count + (last == 0 ? 1 : 0)
            await collector.run(fixture.chat, user: designer, after: last, stopAfter: min(25, remaining))
            for event in collector.realEvents {
                positions.append(event.position)
                if case .messageAdded(let added)? = event.event { seqs.append(added.message?.seq ?? 0) }
            }
            last = collector.lastPosition == 0 ? last : collector.lastPosition
            reconnections += 1
            XCTAssertLessThan(reconnections, 100, "no progress")
            if reconnections >= 100 { break }
        }
        try await sender.value
        XCTAssertGreaterThan(reconnections, 5)
        XCTAssertEqual(seqs, Array(1...Int64(total)), "a message lost, repeated or reordered across reconnections")
        XCTAssertEqual(positions, positions.sorted())
        XCTAssertEqual(Set(positions).count, positions.count)
        try await fixture.stop()
    }

    func testResumingAcrossAServerRestartMissesNothing() async throws {
        let fixture = try await ChatFixture.start()
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        for index in 1...5 { try await fixture.send(customer, room, "before \(index)") }
        let first = StreamCollector()
        await first.run(fixture.chat, user: designer, stopAfter: 4)  // room + 3 messages
        let position = first.lastPosition

        try await fixture.stopChat()
        try await fixture.startChat()
        for index in 6...8 { try await fixture.send(customer, room, "after restart \(index)") }
        let second = StreamCollector()
        await second.run(fixture.chat, user: designer, after: position, stopAfter: 5)
        let seqs = (first.realEvents + second.realEvents).compactMap { event -> Int64? in
            if case .messageAdded(let added)? = event.event { return added.message?.seq }
            return nil
        }
        XCTAssertEqual(seqs, Array(1...8))
        let positions = (first.realEvents + second.realEvents).map(\.position)
        XCTAssertEqual(positions, positions.sorted())
        XCTAssertEqual(Set(positions).count, positions.count)
        try await fixture.stop()
    }

    func testASubscriberThatNeverReadsIsCutOffWhileTheBufferStaysBounded() async throws {
        let capacity = 64
        let fixture = try await ChatFixture.start(hubCapacity: capacity)
        let customer = try await fixture.signUp(.customer)
        let designer = try await fixture.signUp(.designer)
        let room = try await fixture.openRoomID(customer, designer)
        // A client with a small flow-control window that reads the first event and then stops reading.
        let (client, clientTask) = try await fixture.makeClient()
        let stuck = Task { () -> (Int, RPCError?) in
            var received = 0
            do {
                try await YediChat.ChatService.Client(client).subscribe(
                    .init(), options: designer.options(timeout: .seconds(120))
                ) { stream in
                    var iterator = stream.makeAsyncIterator()
                    _ = try await iterator.next()
                    received += 1
                    // Stop reading until the server has given up on us, then drain what arrived.
                    while fixture.hub.subscriptionCount > 0 { try await Task.sleep(for: .milliseconds(20)) }
                    while try await iterator.next() != nil { received += 1 }
                }
                return (received, nil)
            } catch {
                return (received, error as? RPCError)
            }
        }
        let subscribed = try await eventually(timeout: 10) { fixture.hub.subscriptionCount == 1 }
        XCTAssertTrue(subscribed)
        var maxBuffered = 0
        var sent = 0
        let text = String(repeating: "긴 메시지 ", count: 150)  // ~2 KB per event: the window fills fast
        while fixture.hub.subscriptionCount > 0, sent < 5_000 {
            try await fixture.send(customer, room, text)
            sent += 1
            maxBuffered = max(maxBuffered, fixture.hub.bufferedEventCount)
        }
        XCTAssertEqual(fixture.hub.subscriptionCount, 0, "the slow subscriber was never cut off (sent \(sent))")
        XCTAssertLessThanOrEqual(maxBuffered, capacity, "the server buffered more than its bound")
        XCTAssertEqual(fixture.hub.bufferedEventCount, 0)
        let (received, error) = await stuck.value
        XCTAssertEqual(error?.code, .resourceExhausted)
        XCTAssertTrue(error?.message.contains("after_position") == true, error?.message ?? "")
        XCTAssertLessThan(received, sent + 2, "it cannot have received everything")
        client.beginGracefulShutdown()
        await clientTask.value
        try await fixture.stop()
    }

    func testOneUserMayHoldSixteenStreamsAtOnce() async throws {
        let fixture = try await ChatFixture.start()
        let customer = try await fixture.signUp(.customer)
        let collectors = (0..<16).map { _ in StreamCollector() }
        let readers = collectors.map { collector in Task { await collector.run(fixture.chat, user: customer) } }
        let open = try await eventually(timeout: 10) { collectors.allSatisfy(\.caughtUp) }
        XCTAssertTrue(open)
        let extra = StreamCollector()
        await extra.run(fixture.chat, user: customer)
        XCTAssertEqual(extra.end?.code, .resourceExhausted)
        // Another user is not affected.
        let other = try await fixture.signUp(.customer)
        let theirs = StreamCollector()
        let theirReader = Task { await theirs.run(fixture.chat, user: other) }
        let theirsOpen = try await eventually(timeout: 10) { theirs.caughtUp }
        XCTAssertTrue(theirsOpen)
        for reader in readers + [theirReader] { reader.cancel() }
        for reader in readers + [theirReader] { await reader.value }
        try await fixture.stop()
    }

    func testGracefulShutdownEndsOpenStreamsPromptlyWithUnavailable() async throws {
        // A long grace period: a stream that waited for the drain to run out would take 10 s to end.
        let fixture = try await ChatFixture.start(shutdownGrace: 10)
        let customer = try await fixture.signUp(.customer)
        let collector = StreamCollector()
        let reader = Task { await collector.run(fixture.chat, user: customer) }
        let caughtUp = try await eventually(timeout: 10) { collector.caughtUp }
        XCTAssertTrue(caughtUp)
        let started = ContinuousClock.now
        let service = fixture.service
        let stopping = Task { try await service.stop() }
        await reader.value
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(3), "the stream held the drain")
        try await stopping.value
        XCTAssertEqual(collector.end?.code, .unavailable)
        XCTAssertTrue(collector.end?.message.contains("after_position") == true, collector.end?.message ?? "")
        try await fixture.stop()
    }
}
