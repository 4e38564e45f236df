import Foundation

/// A few dedicated threads for slow key derivation.
///
/// scrypt takes tens of milliseconds and 32 MiB: on a NIO event loop it would stall every connection of
/// that loop, and on Swift's cooperative pool it would starve other tasks. A fixed number of threads also
/// bounds memory: at most `threadCount` derivations run at once, the rest wait in the queue.
final class KDFThreadPool: Sendable {
    /// Shared by every `PasswordHasher` in the process: the bound is per process, not per hasher.
    static let shared = KDFThreadPool(threadCount: min(4, max(2, ProcessInfo.processInfo.activeProcessorCount)))

    private let state: WorkQueue

    init(threadCount: Int) {
        precondition(threadCount > 0)
        state = WorkQueue()
        for index in 0..<threadCount {
            let queue = state
            let thread = Thread { queue.runWorker() }
            thread.name = "yedi-kdf-\(index)"
            thread.start()
        }
    }

    /// Runs `work` on one of the pool's threads and returns its result to the awaiting task.
    func run<Result: Sendable>(_ work: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            state.enqueue { continuation.resume(with: Swift.Result { try work() }) }
        }
    }
}

/// The pool's job queue: a condition variable guards the pending jobs.
private final class WorkQueue: @unchecked Sendable {
    // @unchecked: `jobs` is only touched with `condition` locked.
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var head = 0

    func enqueue(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// A worker thread's loop: forever takes the oldest job and runs it outside the lock.
    func runWorker() {
        while true {
            condition.lock()
            while head == jobs.count { condition.wait() }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            }
            condition.unlock()
            job()
        }
    }
}
