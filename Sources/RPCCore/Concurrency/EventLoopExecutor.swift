import NIOCore
import YediSync

/// Runs tasks on a NIO event loop, so that a call's handler task and its connection share a thread.
///
/// A handler task created with this executor preference starts and resumes on the connection's event
/// loop: finishing a call writes to the channel without a thread hop, and the replies of calls that
/// finish in the same loop iteration leave in one flush. A handler that awaits an actor (a database)
/// still hops there and back, as with any executor.
///
/// Jobs wait in a queue of their own, and the loop is given one task per batch of them rather than a
/// closure per job: a closure holding a job and its executor is an allocation, and scheduling it takes
/// the loop's task lock. The replies of one read resume their callers in one batch this way.
public final class EventLoopExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `eventLoop` is immutable and thread-safe by contract; `pending` is behind its lock;
    // `running` is touched only by `runPending`, which runs on the loop alone.
    public let eventLoop: any EventLoop
    private let pending = TSanVisibleMutex(PendingJobs())
    /// The batch being run; kept, so that its storage is reused by the next one.
    private var running: [UnownedJob] = []

    public init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let mustSchedule = pending.withLock { pending in
            pending.jobs.append(job)
            defer { pending.scheduled = true }
            return !pending.scheduled
        }
        // Captures only `self`, which then is the closure's context: nothing to allocate.
        if mustSchedule { eventLoop.execute { self.runPending() } }
    }

    /// Runs the jobs queued so far. Jobs they enqueue wait for the next batch, behind whatever else
    /// the loop has to do by then (I/O included): a task that keeps yielding cannot starve the loop.
    private func runPending() {
        pending.withLock { pending in
            swap(&pending.jobs, &running)
            pending.scheduled = false
        }
        let executor = asUnownedTaskExecutor()
        for job in running { job.runSynchronously(on: executor) }
        running.removeAll(keepingCapacity: true)
    }
}

/// The jobs waiting for the loop, and whether a task to run them is already scheduled there.
private struct PendingJobs {
    var jobs: [UnownedJob] = []
    var scheduled = false
}
