import XCTest

@testable import RPCCore

/// The server connection's rules, without sockets or TLS: events in, actions out.
final class ServerConnectionStateMachineTests: XCTestCase {
    private var machine = ServerConnectionStateMachine(
        limits: WireLimits(maxConcurrentCalls: 2, maxMetadataEntries: 2, maxConnectionBytes: 10_000))

    private func request(
        _ id: UInt64, _ kind: RPCKind? = .unary, cost: Int = 100, metadata: Int = 0, queued: Int = 0
    ) -> ServerConnectionStateMachine.RequestAction {
        machine.requestReceived(
            .init(id: id, kind: kind, metadata: .entries(metadata), cost: cost, queuedReplies: queued))
    }

    private func refusal(_ action: ServerConnectionStateMachine.RequestAction) -> StatusCode? {
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
        let (end, next) = machine.handlerReturned(1)
        XCTAssertEqual(end, .sendOutcome)
        XCTAssertEqual(next, .armIdleTimer)
        XCTAssertFalse(machine.isSending(1))
    }

    func testACancelledCallOwesItsEndUntilItsHandlerReturnsAndKeepsItsSlot() {
        XCTAssertEqual(request(1), .start)
        XCTAssertEqual(request(3), .start)
        let cancelled = RPCError(code: .cancelled, message: "gone")
        XCTAssertTrue(machine.endEarly(1, owing: cancelled))
        XCTAssertFalse(machine.endEarly(1, owing: cancelled), "told once")
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
        let (end, next) = machine.handlerReturned(1)
        XCTAssertEqual(end, .sendOutcome)
        XCTAssertEqual(next, .close)
    }

    func testDrainingAnIdleConnectionClosesAtOnce() {
        XCTAssertEqual(machine.beginDraining(), .init(lastCallID: 0, streamsToEnd: [], closeNow: true))
    }

    func testTheGracePeriodEndsWhatIsLeftOnce() {
        XCTAssertEqual(request(1), .start)
        XCTAssertEqual(request(3), .start)
        XCTAssertTrue(machine.endEarly(3, owing: RPCError(code: .cancelled, message: "")))
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
