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
/// the loop's task lock. The replies of one read resume their callers in one batch this way. Jobs run in
/// the order they were enqueued; against the loop's other tasks, a job runs with the batch it joined, so
/// it may run before a task scheduled after the batch was.
///
/// Once the loop has shut down, the task that would run a batch is dropped (NIO prints why), and the
/// batch with it, as each job's closure was before; jobs enqueued later stay queued and never run.
public final class EventLoopExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `eventLoop` is immutable and thread-safe by contract; `pending` is behind its lock;
    // `spare` is touched only by `runPending`, which runs on the loop.
    public let eventLoop: any EventLoop
    private let pending = TSanVisibleMutex(PendingJobs())
    /// The storage of the last batch run, handed back to the queue for the next one.
    private var spare: [UnownedJob] = []

    public init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let mustSchedule = pending.withLock { pending in
            pending.jobs.append(job)
            let alreadyScheduled = pending.scheduled
            pending.scheduled = true
            return !alreadyScheduled
        }
        // Captures only `self`, which then is the closure's context: nothing to allocate.
        if mustSchedule { eventLoop.execute { self.runPending() } }
    }

    /// Runs the jobs queued so far; jobs they enqueue form the next batch, a task of its own on the loop,
    /// after the loop's tasks already scheduled. (A task that keeps yielding still keeps the loop from
    /// its I/O: NIO runs the tasks that become ready within one tick of its loop.)
    ///
    /// The batch is a local, so that a job that makes an embedded loop run its tasks (`EmbeddedEventLoop`
    /// in tests) cannot make this run again on the same jobs.
    private func runPending() {
        var batch: [UnownedJob] = []
        swap(&batch, &spare)
        pending.withLock { pending in
            swap(&pending.jobs, &batch)
            pending.scheduled = false
        }
        let executor = asUnownedTaskExecutor()
        for job in batch { job.runSynchronously(on: executor) }
        batch.removeAll(keepingCapacity: true)
        spare = batch
    }
}

/// The jobs waiting for the loop, and whether a task to run them is already scheduled there.
private struct PendingJobs {
    var jobs: [UnownedJob] = []
    var scheduled = false
}
