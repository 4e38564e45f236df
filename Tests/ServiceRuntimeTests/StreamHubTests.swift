import NIOConcurrencyHelpers
import RPCCore
import RPCTestSupport
import XCTest

@testable import ServiceRuntime

/// The runtime's live streams: the hub's fan-out per key, its bound on slow subscribers, and the
/// resume logic that joins stored events to live ones without a gap or a duplicate.
final class StreamHubTests: XCTestCase {
    private func event(_ position: Int64, _ key: String) -> HubTestEvent {
        HubTestEvent(position: position, streamKey: key, text: "\(key) #\(position)")
    }

    // MARK: Fan-out

    func testStreamHubFansOutEachEventToEverySubscriberOfItsKeyInOrder() async throws {
        let hub = StreamHub<HubTestEvent>(name: "test", capacity: 100)
        let devices = try (0..<3).map { _ in try hub.subscribe(key: "ann") }
        let events = (1...10).map { event(Int64($0), "ann") }
        hub.publish(Array(events.prefix(4)))
        hub.publish(Array(events.dropFirst(4)))
        for device in devices {
            let taken = try await device.take()
            XCTAssertEqual(taken, events)
        }
        XCTAssertEqual(hub.bufferedEventCount, 0)
        for device in devices { hub.unsubscribe(device) }
    }

    func testStreamHubDeliversAKeysEventsToThatKeysStreamsOnly() async throws {
        let hub = StreamHub<HubTestEvent>(name: "test", capacity: 100)
        let ann = try hub.subscribe(key: "ann")
        let bob = try hub.subscribe(key: "bob")
        hub.publish([event(1, "ann"), event(2, "bob"), event(3, "carl"), event(4, "ann")])
        let annTook = try await ann.take()
        let bobTook = try await bob.take()
        XCTAssertEqual(annTook.map(\.position), [1, 4])
        XCTAssertEqual(bobTook.map(\.position), [2])
        XCTAssertEqual(hub.keyCount, 2, "a key nobody subscribed to is not remembered")
        // A waiting writer is handed the next event of its key at once.
        let waiting = Task { try await bob.take() }
        hub.publish([event(5, "ann"), event(6, "bob")])
        let woke = try await waiting.value
        XCTAssertEqual(woke.map(\.position), [6])
        hub.unsubscribe(ann)
        hub.unsubscribe(bob)
    }

    func testStreamHubRefusesMoreStreamsPerKeyThanItsLimit() throws {
        let hub = StreamHub<HubTestEvent>(name: "test", maxPerKey: 2)
        let first = try hub.subscribe(key: "ann")
        _ = try hub.subscribe(key: "ann")
        XCTAssertThrowsError(try hub.subscribe(key: "ann")) { error in
            XCTAssertEqual((error as? RPCError)?.code, .resourceExhausted)
        }
        XCTAssertNoThrow(try hub.subscribe(key: "bob"), "another key is not affected")
        hub.unsubscribe(first)
        XCTAssertNoThrow(try hub.subscribe(key: "ann"), "a closed stream frees its place")
    }

    // MARK: Slow subscribers

    func testStreamHubEndsASlowSubscriberAtItsBoundWithoutHoldingUpOthers() async throws {
        let capacity = 8
        let hub = StreamHub<HubTestEvent>(name: "test", capacity: capacity)
        let slow = try hub.subscribe(key: "ann")
        let fast = try hub.subscribe(key: "ann")
        slow.wrote(position: 3)
        var received: [HubTestEvent] = []
        var maxBuffered = 0
        for position in 1...100 {
            hub.publish([event(Int64(position), "ann")])
            maxBuffered = max(maxBuffered, slow.bufferedCount)
            XCTAssertLessThanOrEqual(hub.bufferedEventCount, capacity + 1, "one buffer and one event in flight")
            received += try await fast.take()
        }
        XCTAssertEqual(received.map(\.position), Array(1...100), "the fast subscriber missed events")
        XCTAssertLessThanOrEqual(maxBuffered, capacity, "the slow subscriber held more than its buffer")
        let end = try await slow.ended()
        XCTAssertEqual(end.code, .resourceExhausted)
        XCTAssertTrue(end.message.contains("after_position = 3"), end.message)
        XCTAssertEqual(slow.bufferedCount, 0, "a cut-off subscriber keeps its buffer")
        XCTAssertEqual(hub.subscriptionCount, 1)
        do {
            _ = try await slow.take()
            XCTFail("a cut-off subscriber still delivered")
        } catch let error as RPCError {
            XCTAssertEqual(error, end)
        }
        hub.unsubscribe(fast)
    }

    // MARK: Ending streams

    func testStreamHubUnsubscribeFreesTheSubscriptionAndItsBuffer() async throws {
        let hub = StreamHub<HubTestEvent>(name: "test", capacity: 100)
        var subscription: StreamSubscription<HubTestEvent>? = try hub.subscribe(key: "ann")
        weak let released = subscription
        hub.publish((1...50).map { event(Int64($0), "ann") })
        XCTAssertEqual(hub.bufferedEventCount, 50)
        hub.unsubscribe(subscription!)
        XCTAssertEqual(subscription?.bufferedCount, 0, "the buffer outlived the stream")
        XCTAssertEqual(hub.subscriptionCount, 0)
        XCTAssertEqual(hub.keyCount, 0, "the key's empty entry was kept")
        XCTAssertEqual(hub.bufferedEventCount, 0)
        subscription = nil
        XCTAssertNil(released, "the hub still holds the subscription")
        hub.publish([event(51, "ann")])
        XCTAssertEqual(hub.bufferedEventCount, 0)
    }

    func testStreamHubEndKeyEndsThatKeysStreamsOnly() async throws {
        let hub = StreamHub<HubTestEvent>(name: "test")
        let phone = try hub.subscribe(key: "ann")
        let laptop = try hub.subscribe(key: "ann")
        let other = try hub.subscribe(key: "bob")
        let waiting = Task { try await phone.take() }
        let deleted = RPCError(code: .unauthenticated, message: "this account was deleted")
        hub.end(key: "ann", deleted)
        do {
            _ = try await waiting.value
            XCTFail("an ended stream's writer kept waiting")
        } catch let error as RPCError {
            XCTAssertEqual(error, deleted)
        }
        let laptopEnd = try await laptop.ended()
        XCTAssertEqual(laptopEnd, deleted)
        XCTAssertEqual(hub.subscriptionCount, 1)
        XCTAssertNil(other.endReason)
        hub.publish([event(1, "bob")])
        let bobTook = try await other.take()
        XCTAssertEqual(bobTook.map(\.position), [1])
        hub.unsubscribe(other)
    }

    /// The keys observer (ChatService's presence across replicas) hears of a key's first stream and of its
    /// last going, however it goes, and of nothing in between.
    func testStreamHubTellsItsObserverWhenAKeyGainsItsFirstStreamOrLosesItsLast() throws {
        let hub = StreamHub<HubTestEvent>(name: "test", capacity: 1)
        let told = NIOLockedValueBox(0)
        hub.observeKeys { told.withLockedValue { $0 += 1 } }
        let ann = try hub.subscribe(key: "ann")
        XCTAssertEqual(told.withLockedValue { $0 }, 1, "ann's first stream")
        let annAgain = try hub.subscribe(key: "ann")
        XCTAssertEqual(told.withLockedValue { $0 }, 1, "a second device: ann was there already")
        hub.unsubscribe(ann)
        XCTAssertEqual(told.withLockedValue { $0 }, 1, "ann still has a stream")
        hub.unsubscribe(annAgain)
        XCTAssertEqual(told.withLockedValue { $0 }, 2, "ann's last stream closed")
        XCTAssertEqual(hub.openKeys, [])

        _ = try hub.subscribe(key: "bob")
        hub.publish([event(1, "bob"), event(2, "bob")])
        XCTAssertEqual(told.withLockedValue { $0 }, 4, "bob came, then his only stream was cut off as slow")
        _ = try hub.subscribe(key: "carl")
        hub.end(key: "carl", RPCError(code: .unauthenticated, message: "deleted"))
        XCTAssertEqual(told.withLockedValue { $0 }, 6, "carl came and was ended")
        _ = try hub.subscribe(key: "dan")
        XCTAssertEqual(hub.openKeys, ["dan"])
        hub.shutDown()
        XCTAssertEqual(told.withLockedValue { $0 }, 8, "dan came, and went with the shutdown")
        XCTAssertEqual(hub.openKeys, [])
    }

    func testStreamHubShutDownEndsEveryStreamAndRefusesNewOnes() async throws {
        let hub = StreamHub<HubTestEvent>(name: "test")
        let ann = try hub.subscribe(key: "ann")
        hub.shutDown()
        let end = try await ann.ended()
        XCTAssertEqual(end.code, .unavailable)
        XCTAssertTrue(end.message.contains("after_position"), end.message)
        XCTAssertThrowsError(try hub.subscribe(key: "bob")) { error in
            XCTAssertEqual((error as? RPCError)?.code, .unavailable)
        }
        XCTAssertEqual(hub.subscriptionCount, 0)
    }

    // MARK: Resuming

    func testStreamHubResumeDeliversStoredThenLiveWithoutGapOrDuplicateAroundTheSwitch() async throws {
        let hub = StreamHub<HubTestEvent>(name: "test")
        let log = HubTestLog(hub: hub)
        for index in 1...3 { log.commit("ann", "stored \(index)") }
        log.commit("bob", "not ann's")
        // One commit lands before the catch-up read's snapshot (it is in the read and in the buffer: it must
        // come once), one after it (only in the buffer: it must come at all).
        log.duringNextRead(
            before: { log.commit("ann", "during the read") }, after: { log.commit("ann", "after the read") })
        let stream = ResumableStream(hub: hub, log: log, batch: 100, restart: "start over")
        let client = HubTestStream()
        client.start(stream, key: "ann", after: 1)
        let first = await client.next(4)
        XCTAssertEqual(
            first,
            [
                .event(HubTestEvent(position: 2, streamKey: "ann", text: "stored 2")),
                .event(HubTestEvent(position: 3, streamKey: "ann", text: "stored 3")),
                .event(HubTestEvent(position: 5, streamKey: "ann", text: "during the read")),
                .caughtUp(5),
            ])
        log.commit("ann", "live")
        let live = await client.next(2)
        XCTAssertEqual(
            live,
            [
                .event(HubTestEvent(position: 6, streamKey: "ann", text: "after the read")),
                .event(HubTestEvent(position: 7, streamKey: "ann", text: "live")),
            ])
        let end = await client.stop()
        XCTAssertEqual(end?.code, .cancelled)
        XCTAssertEqual(hub.subscriptionCount, 0, "a finished stream stayed subscribed")
    }

    func testStreamHubResumingWhileEventsCommitNeverLosesOrRepeatsOne() async throws {
        let hub = StreamHub<HubTestEvent>(name: "test")
        let log = HubTestLog(hub: hub)
        // Small batches: the catch-up takes several reads, each a chance for a commit in between.
        let stream = ResumableStream(hub: hub, log: log, batch: 3, restart: "start over")
        let total = 400
        let writer = Task {
            for index in 1...total {
                log.commit(index % 3 == 0 ? "bob" : "ann", "\(index)")
                await Task.yield()
            }
        }
        let expected = (1...total).filter { $0 % 3 != 0 }.map(String.init)
        var texts: [String] = []
        var last: Int64 = 0
        var reconnections = 0
        // Each run stops at 20 events or at the last one expected, so a lost event fails the comparison
        // below instead of leaving a stream waiting.
        while texts.last != expected.last, reconnections < 200 {
            let client = HubTestStream()
            client.start(stream, key: "ann", after: last)
            var taken = 0
            reading: for await item in client.items {
                guard case .event(let event) = item else { continue }
                XCTAssertGreaterThan(event.position, last, "a position repeated or went back")
                texts.append(event.text)
                last = event.position
                taken += 1
                if taken == 20 || event.text == expected.last { break reading }
            }
            _ = await client.stop()
            reconnections += 1
        }
        await writer.value
        XCTAssertEqual(texts, expected, "an event lost, repeated or reordered across reconnections")
        XCTAssertGreaterThan(reconnections, 5)
        XCTAssertEqual(hub.subscriptionCount, 0)
    }

    /// Woken all at once (the listener reconnected), streams reading their events from the log take turns
    /// on a few permits, and each still gets its event; without the limit every one reads at once.
    func testStreamHubWokenStreamsReadTheLogAFewAtATime() async throws {
        for limit in [StreamReadLimit(permits: 3), nil] {
            let hub = StreamHub<HubTestEvent>(name: "test")
            let log = HubTestLog(hub: hub)
            let stream = ResumableStream(
                hub: hub, log: log, restart: "start over", liveFromLog: true, reads: limit)
            let clients = (0..<20).map { _ in HubTestStream() }
            for (index, client) in clients.enumerated() { client.start(stream, key: "user\(index)", after: 0) }
            for client in clients {
                let caughtUp = await client.next(1)
                XCTAssertEqual(caughtUp, [.caughtUp(0)])
            }
            log.slowReads(.milliseconds(20))
            for index in clients.indices { log.commit("user\(index)", "hello \(index)") }
            for (index, client) in clients.enumerated() {
                let woken = await client.next(1)
                XCTAssertEqual(
                    woken,
                    [
                        .event(
                            HubTestEvent(position: Int64(index + 1), streamKey: "user\(index)", text: "hello \(index)"))
                    ])
            }
            if let limit {
                XCTAssertEqual(log.mostConcurrentReads, 3, "at most the limit's permits, and all of them")
                XCTAssertEqual(limit.mostInUse, 3)
            } else {
                XCTAssertGreaterThan(log.mostConcurrentReads, 3, "without a limit, the reads overlap freely")
            }
            for client in clients { _ = await client.stop() }
        }
    }

    /// Reads waiting for a permit get it in the order they asked; one cancelled while waiting leaves the
    /// queue, and the permit goes to the next in line.
    func testStreamReadLimitHandsPermitsInOrderAndDropsCancelledWaiters() async throws {
        let limit = StreamReadLimit(permits: 1)
        let (release, releaseNow) = AsyncStream<Void>.makeStream()
        let holder = Task { try await limit.run { for await _ in release { break } } }
        while limit.mostInUse == 0 { await Task.yield() }
        let order = NIOLockedValueBox<[String]>([])
        var waiters: [Task<Void, any Error>] = []
        for name in ["first", "cancelled", "second", "third"] {
            waiters.append(Task { try await limit.run { order.withLockedValue { $0.append(name) } } })
            while limit.waitingCount < waiters.count { await Task.yield() }
        }
        waiters[1].cancel()
        let cancelledResult = await waiters[1].result
        XCTAssertThrowsError(try cancelledResult.get()) { XCTAssertTrue($0 is CancellationError, "\($0)") }
        XCTAssertEqual(limit.waitingCount, 3)
        releaseNow.yield()
        try await holder.value
        for index in [0, 2, 3] { try await waiters[index].value }
        XCTAssertEqual(order.withLockedValue { $0 }, ["first", "second", "third"])
        XCTAssertEqual(limit.mostInUse, 1)
    }

    /// A permit released after a read found none free, but before it queued, is taken by that read: it
    /// does not wait for a release that already happened.
    func testStreamReadLimitAPermitReleasedJustBeforeAReadQueuesIsTaken() async throws {
        let (release, releaseNow) = AsyncStream<Void>.makeStream()
        let holderDone = NIOLockedValueBox(false)
        // Called once, by the second read: the holder finishes while that read is between its two looks.
        let limit = StreamReadLimit(permits: 1) {
            releaseNow.yield()
            while !holderDone.withLockedValue({ $0 }) { await Task.yield() }
        }
        let holder = Task {
            try await limit.run { for await _ in release { break } }
            holderDone.withLockedValue { $0 = true }
        }
        while limit.mostInUse == 0 { await Task.yield() }
        let ran = NIOLockedValueBox(false)
        let second = Task { try await limit.run { ran.withLockedValue { $0 = true } } }
        let done = await eventually(timeout: .seconds(5)) { ran.withLockedValue { $0 } }
        XCTAssertTrue(done, "the read waited although the permit was free")
        second.cancel()
        try await holder.value
        _ = await second.result
    }

    /// Many short reads racing for two permits all finish (a permit released while a read was about to
    /// queue is never left free while it waits) and never more than two at once.
    func testStreamReadLimitUnderContentionLosesNoPermit() async throws {
        let limit = StreamReadLimit(permits: 2)
        let finished = NIOLockedValueBox(0)
        let work = Task {
            await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<2_000 {
                    group.addTask {
                        try await limit.run { await Task.yield() }
                        finished.withLockedValue { $0 += 1 }
                    }
                }
            }
        }
        let done = await eventually(timeout: .seconds(30)) { finished.withLockedValue { $0 } == 2_000 }
        XCTAssertTrue(done, "\(finished.withLockedValue { $0 }) of 2,000 reads finished: a permit was lost")
        work.cancel()
        XCTAssertLessThanOrEqual(limit.mostInUse, 2)
        XCTAssertEqual(limit.waitingCount, 0)
    }

    func testStreamHubResumeRefusesPositionsItCannotServe() async throws {
        let hub = StreamHub<HubTestEvent>(name: "test")
        let log = HubTestLog(hub: hub)
        for index in 1...6 { log.commit("ann", "\(index)") }
        log.prune(through: 4)
        let stream = ResumableStream(hub: hub, log: log, restart: "reload the list")
        for (position, code) in [(-1, StatusCode.invalidArgument), (7, .outOfRange), (3, .outOfRange)] {
            let client = HubTestStream()
            client.start(stream, key: "ann", after: Int64(position))
            let end = await client.end()
            XCTAssertEqual(end?.code, code, "after_position \(position)")
            if code == .outOfRange { XCTAssertTrue(end?.message.hasSuffix("reload the list") == true) }
        }
        // From the pruning's watermark on, nothing was lost.
        let client = HubTestStream()
        client.start(stream, key: "ann", after: 4)
        let items = await client.next(3)
        XCTAssertEqual(items.map(\.position), [5, 6, 6])
        _ = await client.stop()
        XCTAssertEqual(hub.subscriptionCount, 0)
    }
}

extension HubTestStream.Item {
    /// The event's position, or the caught-up mark's.
    fileprivate var position: Int64 {
        switch self {
        case .event(let event): event.position
        case .caughtUp(let position): position
        }
    }
}
