import NIOCore
import XCTest

@testable import RPCCore

/// The server connection's rules, without sockets or TLS: events in, actions out.
final class ServerConnectionStateMachineTests: XCTestCase {
    private var machine = TestServerMachine(
        limits: WireLimits(maxConcurrentCalls: 2, maxMetadataEntries: 2, maxConnectionBytes: 10_000))

    private func request(
        _ id: UInt64, _ kind: RPCKind? = .unary, cost: Int = 100, metadata: Int = 0, queued: Int = 0
    ) -> TestServerMachine.RequestAction {
        machine.requestReceived(
            .init(id: id, kind: kind, metadata: .entries(metadata), cost: cost, queuedReplies: queued))
    }

    private func refusal(_ action: TestServerMachine.RequestAction) -> StatusCode? {
        if case .refuse(let error) = action { return error.code }
        return nil
    }

    // MARK: Admission

    func testCallIDsMustGrow() {
        XCTAssertEqual(request(3), .start)
        guard case .closeWithGoaway = request(3) else { return XCTFail("a repeated id must close the connection") }
        XCTAssertEqual(machine.phase, .closed)
        XCTAssertEqual(request(5), .ignore)
    }

    func testTheConcurrencyLimitCountsRunningHandlers() {
        XCTAssertEqual(request(1), .start)
        XCTAssertEqual(request(3), .start)
        XCTAssertEqual(refusal(request(5)), .resourceExhausted)
        _ = machine.handlerReturned(1)
        XCTAssertEqual(request(7), .start)
    }

    func testMetadataOverTheLimitsIsRefusedBeforeTheMethodIsConsidered() {
        XCTAssertEqual(refusal(request(1, nil, metadata: 3)), .resourceExhausted)
        XCTAssertEqual(request(3, nil, metadata: 2), .refuseUnknownMethod)
        XCTAssertTrue(machine.calls.isEmpty)
    }

    func testTheMemoryBudgetCountsRunningRequestsAndQueuedReplies() {
        XCTAssertEqual(request(1, cost: 6_000), .start)
        XCTAssertEqual(refusal(request(3, cost: 3_000, queued: 1_001)), .resourceExhausted)
        XCTAssertEqual(request(5, cost: 3_000, queued: 1_000), .start)
        _ = machine.handlerReturned(1)
        XCTAssertEqual(request(7, cost: 6_000), .start, "the returned handler's request no longer counts")
    }

    // MARK: Calls ending

    func testAnAnswerIsSentWhenTheHandlerReturnsThenTheConnectionIdles() {
        XCTAssertEqual(request(1), .start)
        XCTAssertTrue(machine.isSending(1))
        let (end, next, _) = machine.handlerReturned(1)
        XCTAssertEqual(end, .sendOutcome)
        XCTAssertEqual(next, .armIdleTimer)
        XCTAssertFalse(machine.isSending(1))
    }

    func testACancelledCallOwesItsEndUntilItsHandlerReturnsAndKeepsItsSlot() {
        XCTAssertEqual(request(1), .start)
        XCTAssertEqual(request(3), .start)
        let cancelled = RPCError(code: .cancelled, message: "gone")
        XCTAssertEqual(machine.endEarly(1, owing: cancelled), 1)
        XCTAssertNil(machine.endEarly(1, owing: cancelled), "told once")
        XCTAssertFalse(machine.isSending(1))
        XCTAssertEqual(refusal(request(5)), .resourceExhausted, "the cancelled handler still holds its slot")
        XCTAssertEqual(machine.handlerReturned(1).0, .sendOwedEnd(cancelled))
        XCTAssertEqual(request(7), .start)
    }

    // MARK: Shutdown

    func testDrainingEndsStreamsAtOnceAndClosesAfterTheLastHandler() {
        XCTAssertEqual(request(1, .unary), .start)
        XCTAssertEqual(request(3, .serverStreaming), .start)
        let drain = machine.beginDraining()
        XCTAssertEqual(drain, .init(lastCallID: 3, streamsToEnd: [3], closeNow: false))
        XCTAssertNil(machine.beginDraining(), "once")
        XCTAssertEqual(refusal(request(5)), .unavailable)
        XCTAssertFalse(machine.isSending(3))
        XCTAssertTrue(machine.isSending(1))
        XCTAssertEqual(machine.handlerReturned(3).0, .nothing, "its END went out when it was ended")
        let (end, next, _) = machine.handlerReturned(1)
        XCTAssertEqual(end, .sendOutcome)
        XCTAssertEqual(next, .close)
    }

    func testDrainingAnIdleConnectionClosesAtOnce() {
        XCTAssertEqual(machine.beginDraining(), .init(lastCallID: 0, streamsToEnd: [], closeNow: true))
    }

    func testTheGracePeriodEndsWhatIsLeftOnce() {
        XCTAssertEqual(request(1), .start)
        XCTAssertEqual(request(3), .start)
        XCTAssertEqual(machine.endEarly(3, owing: RPCError(code: .cancelled, message: "")), 3)
        _ = machine.beginDraining()
        XCTAssertEqual(machine.gracePeriodEnded(), [1], "call 3 had ended already")
        XCTAssertEqual(machine.gracePeriodEnded(), [])
        XCTAssertEqual(machine.handlerReturned(1).0, .nothing)
    }

    func testTheIdleTimerClosesOnlyAConnectionWithoutCalls() {
        XCTAssertEqual(request(1), .start)
        XCTAssertFalse(machine.idleTimerFired())
        _ = machine.handlerReturned(1)
        XCTAssertTrue(machine.idleTimerFired())
        XCTAssertEqual(request(3), .ignore)
    }

    func testAClosedConnectionCancelsEveryHandlerAndForgetsThem() {
        XCTAssertEqual(request(1), .start)
        XCTAssertEqual(request(3), .start)
        XCTAssertEqual(machine.connectionClosed(), [1, 3])
        XCTAssertEqual(machine.handlerReturned(1).0, .nothing)
        XCTAssertEqual(machine.handlerReturned(3).1, .nothing)
    }
}

/// The machine is the connection's one table of calls and of waiting replies: it keeps the handler's
/// objects for each (here, names) and hands them back in the actions that need them.
final class ServerConnectionStateMachineResourcesTests: XCTestCase {
    private var machine = ServerConnectionStateMachine<String, String>(
        limits: WireLimits(maxConcurrentCalls: 3, maxConnectionBytes: 10_000))
    private var made: [UInt64] = []

    private func request(_ id: UInt64, kind: RPCKind? = .unary, share: Int = 0)
        -> ServerConnectionStateMachine<
            String, String
        >.RequestAction
    {
        machine.requestReceived(
            .init(id: id, kind: kind, metadata: MetadataSize(), cost: 100, queuedReplies: 0, replyShare: share)
        ) {
            made.append(id)
            return "call \(id)"
        }
    }

    func testResourcesAreMadeOnlyForAdmittedCallsAndHandedBackWhenTheyEnd() {
        XCTAssertEqual(request(1), .start)
        XCTAssertEqual(request(3, kind: nil), .refuseUnknownMethod)
        XCTAssertEqual(request(5, kind: .serverStreaming), .start)
        XCTAssertEqual(made, [1, 5], "a refused call gets no resources")
        XCTAssertEqual(machine.call(5), "call 5")
        XCTAssertEqual(machine.sendingCall(5), "call 5")
        XCTAssertEqual(machine.endEarly(5, owing: RPCError(code: .cancelled, message: "")), "call 5")
        XCTAssertNil(machine.sendingCall(5), "over for its client")
        XCTAssertEqual(machine.call(5), "call 5", "still in the table while its handler runs")
        let (end, _, returned) = machine.handlerReturned(1)
        XCTAssertEqual(end, .sendOutcome)
        XCTAssertEqual(returned, "call 1")
        XCTAssertNil(machine.call(1))
        XCTAssertNil(machine.handlerReturned(1).call, "once")
        XCTAssertEqual(machine.connectionClosed(), ["call 5"])
        XCTAssertTrue(machine.calls.isEmpty)
    }

    func testHeldCallsAreHandedBackWhenTheyStartOrEnd() {
        XCTAssertEqual(request(1, share: 6_000), .start)
        XCTAssertEqual(request(3, share: 6_000), .hold)
        XCTAssertEqual(request(5, share: 6_000), .hold)
        XCTAssertEqual(made, [1, 3, 5], "a held call has its resources while it waits")
        XCTAssertEqual(machine.call(3), "call 3")
        let ended = machine.heldCallEnded(3)
        XCTAssertEqual(ended?.call, "call 3")
        XCTAssertEqual(ended?.next, .nothing)
        XCTAssertNil(machine.call(3))
        _ = machine.handlerReturned(1)
        XCTAssertEqual(machine.callsToStart(), ["call 5"])
    }

    /// A share larger than the whole budget starts only alone: nothing else set aside (the count of
    /// started calls with a share, kept instead of a scan of the table) and no reply in flight.
    func testAShareLargerThanTheBudgetStartsOnlyAlone() {
        XCTAssertEqual(request(1, share: 9_000), .start)
        XCTAssertEqual(request(3, share: 5_000), .hold, "the budget is taken by the first one's share")
        XCTAssertEqual(machine.callsToStart(), [], "still taken")
        _ = machine.handlerReturned(1)
        XCTAssertEqual(machine.callsToStart(), ["call 3"])
        XCTAssertEqual(request(5, share: 20_000), .hold, "not alone: call 3 has its share set aside")
        XCTAssertEqual(machine.callsToStart(), [])
        _ = machine.handlerReturned(3)
        XCTAssertEqual(machine.callsToStart(), ["call 5"], "alone now, so it starts whatever its size")
        guard case .refuse(let error) = request(7, share: 100) else { return XCTFail("call 7 was admitted") }
        XCTAssertEqual(error.code, .resourceExhausted, "and it takes the budget")
        _ = machine.handlerReturned(5)
        XCTAssertEqual(request(9, share: 100), .start, "nothing set aside any more")
    }

    func testDrainingAndTheGracePeriodHandBackTheCallsToEnd() {
        XCTAssertEqual(request(1), .start)
        XCTAssertEqual(request(3, kind: .serverStreaming), .start)
        XCTAssertEqual(machine.beginDraining()?.streamsToEnd, ["call 3"])
        XCTAssertEqual(machine.gracePeriodEnded(), ["call 1"])
    }

    func testWaitingRepliesAreKeptAndHandedBackInOrder() {
        let now = NIODeadline.uptimeNanoseconds(1)
        XCTAssertEqual(machine.replyProduced("first", bytes: 9_000, at: now), .write)
        XCTAssertEqual(machine.replyProduced("second", bytes: 2_000, at: now), .wait(ticket: 1))
        XCTAssertEqual(machine.replyProduced("third", bytes: 1, at: now), .wait(ticket: 2))
        XCTAssertEqual(machine.waitingReplies.map(\.reply), ["second", "third"])
        XCTAssertEqual(machine.replyWritten(bytes: 9_000, at: now).map(\.reply), ["second", "third"])
        XCTAssertTrue(machine.waitingReplies.isEmpty)
        XCTAssertEqual(machine.replyProduced("fourth", bytes: 9_000, at: now), .wait(ticket: 3))
        XCTAssertEqual(
            machine.releaseWaitingReplies(),
            [ServerConnectionStateMachine<String, String>.WaitingReply(ticket: 3, bytes: 9_000, reply: "fourth")])
    }
}
