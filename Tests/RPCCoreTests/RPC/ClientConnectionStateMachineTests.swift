import XCTest

@testable import RPCCore

/// The client connection's rules, without sockets or TLS: slots, SETTINGS, GOAWAY, failure.
final class ClientConnectionStateMachineTests: XCTestCase {
    private var machine = ClientConnectionStateMachine(maxConcurrentCalls: 100, maxFrameBytes: 1 << 20)

    private func send() -> UInt64 {
        XCTAssertEqual(machine.startDecision(), .send)
        let id = machine.nextCallID()
        machine.callSent(id)
        return id
    }

    func testTheServersSettingsSetTheLimitsAndMakeTheConnectionReady() {
        XCTAssertFalse(machine.isReady)
        XCTAssertTrue(machine.settingsReceived(maxConcurrentCalls: 2, maxFrameBytes: 4096))
        XCTAssertFalse(machine.settingsReceived(maxConcurrentCalls: 0, maxFrameBytes: 0), "ready once")
        XCTAssertEqual(machine.maxConcurrentCalls, 2)
        XCTAssertEqual(machine.maxSendFrameBytes, 4096, "a smaller announced frame limit is kept to")
        XCTAssertEqual(machine.maxReceiveFrameBytes, 1 << 20, "we still accept what we always accepted")
        XCTAssertFalse(machine.settingsReceived(maxConcurrentCalls: 500, maxFrameBytes: 11 << 20))
        XCTAssertEqual(machine.maxConcurrentCalls, 2, "never above our own")
        XCTAssertEqual(machine.maxSendFrameBytes, 11 << 20, "a larger announced frame limit is used, not ours")
        XCTAssertEqual(machine.maxReceiveFrameBytes, 11 << 20, "and its replies are accepted")
        _ = machine.settingsReceived(maxConcurrentCalls: 0, maxFrameBytes: 1 << 30)
        XCTAssertEqual(machine.maxReceiveFrameBytes, 64 << 20, "a server cannot raise what we buffer past the ceiling")
    }

    func testCallIDsGrowAndCallsWaitForAFreeSlot() {
        _ = machine.settingsReceived(maxConcurrentCalls: 2, maxFrameBytes: 0)
        let first = send()
        let second = send()
        XCTAssertLessThan(first, second)
        XCTAssertEqual(machine.startDecision(), .wait)
        XCTAssertEqual(machine.endReceived(first), .resolve)
        XCTAssertEqual(machine.startDecision(), .send)
        XCTAssertEqual(machine.endReceived(first), .unknown)
    }

    func testAnAbandonedCallKeepsItsSlotUntilItsEnd() {
        _ = machine.settingsReceived(maxConcurrentCalls: 1, maxFrameBytes: 0)
        let id = send()
        XCTAssertTrue(machine.callAbandoned(id))
        XCTAssertFalse(machine.callAbandoned(id), "one CANCEL")
        XCTAssertEqual(machine.activeCalls(pending: 0), 0, "nobody waits for it")
        XCTAssertEqual(machine.startDecision(), .wait, "but the server still runs it")
        XCTAssertEqual(machine.endReceived(id), .slotFreed)
        XCTAssertEqual(machine.startDecision(), .send)
    }

    func testGoawayFailsOnlyTheRunningCallsTheServerNeverSaw() {
        let seen = send()
        let abandoned = send()
        let unseen = send()
        XCTAssertTrue(machine.callAbandoned(abandoned))
        XCTAssertEqual(machine.goawayReceived(lastCallID: seen), [unseen])
        XCTAssertNil(machine.goawayReceived(lastCallID: 0), "once")
        guard case .failUnsent = machine.startDecision() else { return XCTFail("no new call after GOAWAY") }
        XCTAssertFalse(machine.shouldClose(pending: 0), "the seen call still runs")
        XCTAssertEqual(machine.endReceived(seen), .resolve)
        XCTAssertTrue(machine.shouldClose(pending: 0))
    }

    func testTheFirstFailureIsTheOneReportedAndRunningCallsFailWithIt() {
        let running = send()
        let abandoned = send()
        XCTAssertTrue(machine.callAbandoned(abandoned))
        machine.failed(RPCError(code: .unavailable, message: "keepalive timeout"))
        let (error, failing) = machine.closed(RPCError(code: .unavailable, message: "the connection was lost"))
        XCTAssertEqual(error.message, "keepalive timeout")
        XCTAssertEqual(failing, [running])
        XCTAssertEqual(machine.startDecision(), .failUnsent(error))
    }

    func testShuttingDownClosesOnceNobodyWaits() {
        let id = send()
        machine.closeWhenIdle()
        XCTAssertFalse(machine.shouldClose(pending: 0))
        XCTAssertEqual(machine.endReceived(id), .resolve)
        XCTAssertFalse(machine.shouldClose(pending: 1), "a queued call still waits")
        XCTAssertTrue(machine.shouldClose(pending: 0))
    }
}
