import XCTest

@testable import LoadGenerator

/// The schedule and the pacer decide with instants they are given, so these tests never wait.
final class CallScheduleTests: XCTestCase {
    let start = ContinuousClock.now

    func testDueTimesFollowTheRateWithoutDrift() {
        let pacer = RatePacer(rate: 1000)
        XCTAssertEqual(pacer.offset(ofCall: 0), .zero)
        XCTAssertEqual(pacer.offset(ofCall: 3), .milliseconds(3))
        XCTAssertEqual(pacer.offset(ofCall: 1_000_000), .seconds(1000))
        let thirds = RatePacer(rate: 3)
        XCTAssertEqual(thirds.offset(ofCall: 1), .nanoseconds(333_333_333))
        XCTAssertEqual(thirds.offset(ofCall: 3), .seconds(1), "computed from the index, not summed")
        XCTAssertEqual(thirds.offset(ofCall: 3_000_000_000), .seconds(1_000_000_000))
        XCTAssertEqual(pacer.dueTime(ofCall: 5, start: start), start + .milliseconds(5))
    }

    func testOpenModelTicketsAreDueOnTheTimetableHoweverLateTheyAreTaken() {
        let schedule = CallSchedule(
            plan: LoadPlan(concurrency: 2, limit: .duration(.seconds(1)), pacer: RatePacer(rate: 100)), start: start)
        // A worker that comes back two seconds late finds the calls it missed already due: they are
        // made now, and their latency counts from when they were due.
        let late = start + .seconds(2)
        XCTAssertEqual(schedule.next(now: late), .init(sequence: 0, due: start))
        XCTAssertEqual(schedule.next(now: late), .init(sequence: 1, due: start + .milliseconds(10)))
        // One taken early is due in the future: the worker waits for it.
        XCTAssertEqual(schedule.next(now: start), .init(sequence: 2, due: start + .milliseconds(20)))
    }

    func testOpenModelDurationAllowsExactlyRateTimesDuration() {
        let schedule = CallSchedule(
            plan: LoadPlan(concurrency: 4, limit: .duration(.seconds(2)), pacer: RatePacer(rate: 250)), start: start)
        var count = 0
        var last: CallSchedule<ContinuousClock.Instant>.Ticket?
        while let ticket = schedule.next(now: start) {
            count += 1
            last = ticket
        }
        XCTAssertEqual(count, 500)
        XCTAssertEqual(last?.due, start + .milliseconds(1996))
        XCTAssertNil(schedule.next(now: start + .seconds(10)), "over stays over")
    }

    func testClosedModelTicketsAreDueWhenTakenUntilTheDurationEnds() {
        let schedule = CallSchedule(plan: LoadPlan(concurrency: 1, limit: .duration(.seconds(3))), start: start)
        XCTAssertEqual(schedule.next(now: start), .init(sequence: 0, due: start))
        XCTAssertEqual(
            schedule.next(now: start + .milliseconds(2999)), .init(sequence: 1, due: start + .milliseconds(2999)))
        XCTAssertNil(schedule.next(now: start + .seconds(3)))
        XCTAssertEqual(schedule.issued, 2)
    }

    func testTotalLimitsBothModels() {
        for pacer in [nil, RatePacer(rate: 1)] {
            let schedule = CallSchedule(plan: LoadPlan(concurrency: 3, limit: .total(5), pacer: pacer), start: start)
            var sequences: [UInt64] = []
            // However much time passes, a total is a total.
            while let ticket = schedule.next(now: start + .seconds(3600)) { sequences.append(ticket.sequence) }
            XCTAssertEqual(sequences, [0, 1, 2, 3, 4])
        }
    }

    func testStopEndsTheRun() {
        let schedule = CallSchedule(plan: LoadPlan(concurrency: 1, limit: .total(100)), start: start)
        XCTAssertNotNil(schedule.next(now: start))
        schedule.stop()
        XCTAssertNil(schedule.next(now: start))
        XCTAssertEqual(schedule.issued, 1)
    }
}
