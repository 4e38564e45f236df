import NIOCore
import XCTest

@testable import RPCCore

/// The rules for replies, without sockets: they count against the connection's memory budget from the
/// moment a handler produces them until they are written, wait in order when it is full, keep new calls
/// out meanwhile, and a connection whose replies do not move for the stall timeout is closed.
final class ReplyBudgetRulesTests: XCTestCase {
    private let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    private func machine(budget: Int = 10_000, stall: TimeAmount = .seconds(30)) -> TestServerMachine {
        TestServerMachine(
            limits: WireLimits(maxConcurrentCalls: 8, maxConnectionBytes: budget), replyStallTimeout: stall)
    }

    private func request(
        _ id: UInt64, cost: Int = 100, share: Int = 0, kind: RPCKind = .unary
    ) -> TestServerMachine.Request {
        .init(id: id, kind: kind, metadata: MetadataSize(), cost: cost, queuedReplies: 0, replyShare: share)
    }

    // MARK: The budget alone

    func testAReplyIsCountedUntilWrittenAndOneAloneAlwaysFits() {
        var budget = ConnectionMemoryBudget(limit: 10_000)
        XCTAssertTrue(budget.admitReply(25_000), "a reply larger than the budget leaves, alone")
        XCTAssertFalse(budget.admitReply(1), "nothing else while it is in flight")
        budget.replyWritten(25_000)
        XCTAssertTrue(budget.admitReply(6_000))
        XCTAssertTrue(budget.admitReply(4_000))
        XCTAssertFalse(budget.admitReply(1))
        XCTAssertFalse(budget.admitCall(1, queuedReplies: 0), "replies not yet written keep calls out too")
        budget.replyWritten(4_000)
        XCTAssertTrue(budget.admitCall(1_000, queuedReplies: 3_000), "the socket's count is not added twice")
        XCTAssertEqual(budget.heldByReplies, 6_000)
    }

    // MARK: Replies in the state machine

    func testRepliesBeyondTheBudgetWaitAndLeaveInOrderAsOthersAreWritten() {
        var machine = machine()
        XCTAssertEqual(machine.replyProduced(bytes: 6_000, at: start), .write)
        XCTAssertEqual(machine.replyProduced(bytes: 6_000, at: start), .wait(ticket: 1))
        XCTAssertEqual(machine.replyProduced(bytes: 1_000, at: start), .wait(ticket: 2), "no overtaking")
        XCTAssertEqual(machine.replyWritten(bytes: 6_000, at: start).map(\.ticket), [1, 2])
        XCTAssertEqual(machine.budget.heldByReplies, 7_000)
        XCTAssertEqual(machine.replyProduced(bytes: 3_001, at: start), .wait(ticket: 3))
        XCTAssertEqual(machine.replyWritten(bytes: 1_000, at: start).map(\.ticket), [3])
        XCTAssertEqual(machine.budget.heldByReplies, 9_001)
        XCTAssertTrue(machine.waitingReplies.isEmpty)
    }

    func testNoCallStartsWhileRepliesWaitNorWhileRepliesFillTheBudget() {
        var machine = machine()
        XCTAssertEqual(machine.requestReceived(request(1)), .start)
        _ = machine.handlerReturned(1)
        XCTAssertEqual(machine.replyProduced(bytes: 9_000, at: start), .write)
        guard case .refuse(let full) = machine.requestReceived(request(3, cost: 1_001)) else {
            return XCTFail("a call that does not fit beside the replies in flight must be refused")
        }
        XCTAssertEqual(full.code, .resourceExhausted)
        XCTAssertEqual(machine.requestReceived(request(5, cost: 500)), .start)
        XCTAssertEqual(machine.replyProduced(bytes: 2_000, at: start), .wait(ticket: 1))
        guard case .refuse(let waiting) = machine.requestReceived(request(7, cost: 1)) else {
            return XCTFail("a call must not start while a reply waits: its own reply would wait too")
        }
        XCTAssertTrue(waiting.message.contains("memory budget"), waiting.message)
        XCTAssertEqual(machine.replyWritten(bytes: 9_000, at: start).map(\.ticket), [1])
        XCTAssertEqual(machine.requestReceived(request(9, cost: 1_000)), .start)
    }

    func testAGracefulCloseReleasesTheWaitingRepliesAndAClosedConnectionForgetsThem() {
        var machine = machine()
        XCTAssertEqual(machine.replyProduced(bytes: 9_000, at: start), .write)
        XCTAssertEqual(machine.replyProduced(bytes: 9_000, at: start), .wait(ticket: 1))
        XCTAssertEqual(machine.releaseWaitingReplies().map(\.ticket), [1])
        XCTAssertEqual(machine.budget.heldByReplies, 18_000)
        XCTAssertEqual(machine.replyProduced(bytes: 1, at: start), .wait(ticket: 2))
        _ = machine.connectionClosed()
        XCTAssertTrue(machine.waitingReplies.isEmpty)
        XCTAssertNil(machine.nextStallCheck)
    }

    // MARK: Calls whose replies are known to be large

    func testUnaryCallsSetTheirReplysShareAsideAndWaitToStartWhenItDoesNotFit() {
        var machine = machine()
        XCTAssertEqual(machine.requestReceived(request(1, share: 4_000)), .start)
        XCTAssertEqual(machine.requestReceived(request(3, share: 4_000)), .start)
        XCTAssertEqual(machine.requestReceived(request(5, share: 4_000)), .hold, "8,200 held: 4,000 more do not fit")
        XCTAssertEqual(machine.requestReceived(request(7, share: 1)), .hold, "held calls start in order")
        XCTAssertEqual(machine.requestReceived(request(9, kind: .serverStreaming)), .start, "streams set nothing aside")
        XCTAssertEqual(machine.requestReceived(request(11)), .start, "nor do methods with small replies")
        XCTAssertEqual(machine.heldCalls, [5, 7])
        XCTAssertFalse(machine.calls[5]!.started)

        // Call 1 answers: its share becomes its reply, counted until written.
        XCTAssertEqual(machine.handlerReturned(1).0, .sendOutcome)
        XCTAssertEqual(machine.replyProduced(bytes: 4_000, at: start), .write)
        XCTAssertEqual(machine.callsToStart(), [], "its reply is still in flight")
        XCTAssertEqual(machine.replyWritten(bytes: 4_000, at: start).map(\.ticket), [])
        XCTAssertEqual(machine.callsToStart(), [5, 7])
        XCTAssertTrue(machine.calls[5]!.started)
    }

    func testACallAloneStartsWhateverItsShare() {
        var machine = machine()
        XCTAssertEqual(machine.requestReceived(request(1, share: 50_000)), .start, "alone, it fits whatever its size")
        guard case .refuse(let error) = machine.requestReceived(request(3, share: 1)) else {
            return XCTFail("the budget is taken: a call that does not fit is refused as before")
        }
        XCTAssertEqual(error.code, .resourceExhausted)
        _ = machine.handlerReturned(1)
        XCTAssertEqual(machine.budget.heldByCalls, 0, "its share given back")
    }

    func testAHeldCallEndingEarlyLeavesTheQueue() {
        var machine = machine()
        XCTAssertEqual(machine.requestReceived(request(1, share: 6_000)), .start)
        XCTAssertEqual(machine.requestReceived(request(3, share: 6_000)), .hold)
        XCTAssertEqual(machine.requestReceived(request(5, share: 6_000)), .hold)
        XCTAssertEqual(machine.heldCallEnded(3)?.next, .some(.nothing), "the client cancelled it before it started")
        XCTAssertNil(machine.heldCallEnded(1), "a started call ends the usual way")
        XCTAssertEqual(machine.heldCalls, [5])
        _ = machine.handlerReturned(1)
        XCTAssertEqual(machine.callsToStart(), [5])
        XCTAssertEqual(machine.handlerReturned(5).1, .armIdleTimer)
        XCTAssertEqual(machine.budget.heldByCalls, 0, "every share given back")
    }

    func testHeldCallsAreEndedByTheGracePeriodAndForgottenWithTheConnection() {
        var machine = machine()
        XCTAssertEqual(machine.requestReceived(request(1, share: 9_000)), .start)
        XCTAssertEqual(machine.requestReceived(request(3, share: 9_000)), .hold)
        XCTAssertEqual(machine.beginDraining()?.closeNow, false)
        XCTAssertEqual(machine.gracePeriodEnded(), [1, 3])
        XCTAssertEqual(machine.callsToStart(), [], "closing: nothing starts")
        _ = machine.connectionClosed()
        XCTAssertTrue(machine.heldCalls.isEmpty)
    }

    func testTheReplySizeEstimateKeepsTheLargestReplyAndTheColdSizeBeforeTheFirst() {
        let estimate = ReplySizeEstimate()
        XCTAssertEqual(estimate.bytes(cold: 4 << 20), 4 << 20, "before any reply: the largest a reply may be")
        estimate.record(10)
        XCTAssertEqual(estimate.bytes(cold: 4 << 20), 10)
        estimate.record(4_000)
        estimate.record(10)
        XCTAssertEqual(estimate.bytes(cold: 4 << 20), 4_000)
    }

    // MARK: Stalls

    func testAConnectionWhoseRepliesDoNotMoveForTheTimeoutIsClosed() {
        var machine = machine(stall: .seconds(30))
        XCTAssertNil(machine.nextStallCheck, "no clock without replies")
        XCTAssertEqual(machine.replyProduced(bytes: 9_000, at: start), .write)
        XCTAssertEqual(machine.nextStallCheck, start + .seconds(10))
        XCTAssertEqual(
            machine.stallCheck(at: start + .seconds(10), queuedBytes: 9_000), .checkAgain(at: start + .seconds(20)))
        XCTAssertEqual(
            machine.stallCheck(at: start + .seconds(20), queuedBytes: 9_000), .checkAgain(at: start + .seconds(30)))
        XCTAssertEqual(machine.stallCheck(at: start + .seconds(30), queuedBytes: 9_000), .close)
        XCTAssertEqual(machine.phase, .closed)
    }

    func testASlowReaderThatDrainsTheSocketOrTakesRepliesIsNotClosed() {
        var machine = machine(stall: .seconds(30))
        XCTAssertEqual(machine.replyProduced(bytes: 9_000, at: start), .write)
        _ = machine.stallCheck(at: start + .seconds(10), queuedBytes: 9_000)
        XCTAssertEqual(
            machine.stallCheck(at: start + .seconds(20), queuedBytes: 8_000), .checkAgain(at: start + .seconds(30)),
            "the socket's queue shrank: progress")
        XCTAssertEqual(
            machine.stallCheck(at: start + .seconds(45), queuedBytes: 8_000), .checkAgain(at: start + .seconds(50)))
        XCTAssertEqual(machine.replyProduced(bytes: 500, at: start + .seconds(46)), .write)
        XCTAssertEqual(machine.replyWritten(bytes: 9_000, at: start + .seconds(48)).map(\.ticket), [])
        XCTAssertEqual(
            machine.stallCheck(at: start + .seconds(50), queuedBytes: 500), .checkAgain(at: start + .seconds(60)),
            "a reply written: progress")
        XCTAssertEqual(machine.replyWritten(bytes: 500, at: start + .seconds(51)).map(\.ticket), [])
        XCTAssertEqual(machine.stallCheck(at: start + .seconds(200), queuedBytes: 0), .nothing, "nothing outstanding")
        XCTAssertEqual(machine.phase, .serving)
    }

    func testAZeroTimeoutNeverCloses() {
        var machine = machine(stall: .zero)
        XCTAssertEqual(machine.replyProduced(bytes: 9_000, at: start), .write)
        XCTAssertNil(machine.nextStallCheck)
        XCTAssertEqual(machine.stallCheck(at: start + .hours(1), queuedBytes: 9_000), .nothing)
    }
}
