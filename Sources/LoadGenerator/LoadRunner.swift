import NIOConcurrencyHelpers

/// Runs a plan: `concurrency` workers take tickets from the schedule, wait until each is due, make
/// the call and record its latency from the due time. The calls themselves are the caller's (a
/// closure), so the runner knows nothing of RPC and its logic can be tested with a stand-in.
public struct LoadRunner: Sendable {
    /// Makes call number `sequence` and returns its status: `LoadTally.ok` or an error's name.
    public typealias Call = @Sendable (_ sequence: UInt64) async -> String

    public let plan: LoadPlan

    public init(plan: LoadPlan) {
        self.plan = plan
    }

    /// How many tallies the workers share: few enough to stay small (each histogram is about 100 KB,
    /// whatever the concurrency), enough that workers seldom wait for one another's lock.
    static func shardCount(concurrency: Int) -> Int { min(concurrency, 16) }

    /// Runs until the plan's limit, or until the task is cancelled (then the calls in flight are
    /// cancelled and the tally so far is returned). `progress` is called about once a second.
    public func run(
        call: @escaping Call,
        progress: (@Sendable (ProgressLine) -> Void)? = nil
    ) async -> (tally: LoadTally, elapsed: Duration, interrupted: Bool) {
        let clock = ContinuousClock()
        let start = clock.now
        let schedule = CallSchedule(plan: plan, start: start)
        let shards = (0..<Self.shardCount(concurrency: plan.concurrency)).map { _ in NIOLockedValueBox(LoadTally()) }
        let interrupted = NIOLockedValueBox(false)

        await withTaskCancellationHandler {
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<plan.concurrency {
                    let shard = shards[worker % shards.count]
                    group.addTask {
                        await Self.work(schedule: schedule, clock: clock, call: call, into: shard)
                    }
                }
                if let progress {
                    let limit = plan.limit
                    group.addTask {
                        await Self.report(
                            every: .seconds(1), shards: shards, clock: clock, start: start, limit: limit, progress)
                    }
                }
                // The workers end with the schedule; the progress task ends when it sees them all done.
                for _ in 0..<plan.concurrency { await group.next() }
                group.cancelAll()
            }
        } onCancel: {
            interrupted.withLockedValue { $0 = true }
            schedule.stop()
        }
        let elapsed = clock.now - start
        var tally = LoadTally()
        for shard in shards { tally.merge(shard.withLockedValue { $0 }) }
        return (tally, elapsed, interrupted.withLockedValue { $0 })
    }

    private static func work(
        schedule: CallSchedule<ContinuousClock.Instant>,
        clock: ContinuousClock,
        call: Call,
        into shard: NIOLockedValueBox<LoadTally>
    ) async {
        // A cancelled worker takes no more tickets: the child tasks may learn of the cancellation before
        // the schedule is stopped, and a call made then would only count a CANCELLED that never went out.
        while !Task.isCancelled, let ticket = schedule.next(now: clock.now) {
            if ticket.due > clock.now {
                do {
                    try await clock.sleep(until: ticket.due)
                } catch {
                    return  // cancelled: the run is being interrupted
                }
            }
            let status = await call(ticket.sequence)
            let latency = clock.now - ticket.due
            shard.withLockedValue { $0.record(latency: latency, status: status) }
        }
    }

    private static func report(
        every interval: Duration,
        shards: [NIOLockedValueBox<LoadTally>],
        clock: ContinuousClock,
        start: ContinuousClock.Instant,
        limit: LoadPlan.Limit,
        _ progress: @Sendable (ProgressLine) -> Void
    ) async {
        var previousCalls: UInt64 = 0
        var previousTime = start
        var next = start
        while true {
            next = next.advanced(by: interval)
            do {
                try await clock.sleep(until: next)
            } catch {
                return
            }
            var calls: UInt64 = 0
            var failures: UInt64 = 0
            for shard in shards {
                shard.withLockedValue { tally in
                    calls += tally.calls
                    failures += tally.failures
                }
            }
            let now = clock.now
            let seconds = LoadReport.seconds(now - previousTime)
            let rate = seconds > 0 ? Double(calls - previousCalls) / seconds : 0
            progress(
                ProgressLine(elapsed: now - start, calls: calls, failures: failures, recentRate: rate, limit: limit))
            previousCalls = calls
            previousTime = now
        }
    }
}
