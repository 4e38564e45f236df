import NIOCore

/// Runs tasks on a NIO event loop, so that a call's handler task and its connection share a thread.
///
/// A handler task created with this executor preference starts and resumes on the connection's event
/// loop: finishing a call writes to the channel without a thread hop, and the replies of calls that
/// finish in the same loop iteration leave in one flush. A handler that awaits an actor (a database)
/// still hops there and back, as with any executor.
public final class EventLoopExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: the only state, `eventLoop`, is immutable and thread-safe by contract.
    public let eventLoop: any EventLoop

    public init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
