import Foundation

/// A few dedicated threads for slow key derivation, in front of them a bounded, fair queue.
///
/// scrypt takes tens of milliseconds and 32 MiB: on a NIO event loop it would stall every connection of
/// that loop, and on Swift's cooperative pool it would starve other tasks. A fixed number of threads also
/// bounds memory: at most `threadCount` derivations run at once.
///
/// The queue is where anonymous callers could pile up work, so it is bounded three ways:
/// - at most `queueLimit` jobs wait in all; beyond that `run` throws `KDFQueueError.full` at once;
/// - at most `perKeyLimit` jobs wait per key (the client address; none for the empty key, the process's
///   own work), so one client cannot fill it;
/// - a job whose caller has gone (deadline passed, task cancelled) when a thread picks it up is dropped,
///   never derived.
/// And it is shared: one key never has more than `threadCount - 1` derivations running (1 with one
/// thread), so with two threads or more a flood from one address leaves a thread for everyone else; a
/// free thread takes the waiting key with the fewest derivations running, then the one served least
/// recently, then the one waiting longest.
final class KDFThreadPool: Sendable {
    /// Shared by every `PasswordHasher` in the process: the bound is per process, not per hasher.
    static let shared = KDFThreadPool(threadCount: min(4, max(2, ProcessInfo.processInfo.activeProcessorCount)))

    /// Jobs that may wait, in all (`docs/account.md`): with 2–4 threads at ~0.1 s a derivation, a full
    /// queue is about a second of work.
    static let defaultQueueLimit = 32
    /// Jobs one key may have waiting.
    static let defaultPerKeyLimit = 4

    private let state: WorkQueue

    init(threadCount: Int, queueLimit: Int = defaultQueueLimit, perKeyLimit: Int = defaultPerKeyLimit) {
        precondition(threadCount > 0 && queueLimit > 0 && perKeyLimit > 0)
        state = WorkQueue(queueLimit: queueLimit, perKeyLimit: perKeyLimit, runningPerKey: max(1, threadCount - 1))
        for index in 0..<threadCount {
            let queue = state
            let thread = Thread { queue.runWorker() }
            thread.name = "yedi-kdf-\(index)"
            thread.start()
        }
    }

    /// Runs `work` on one of the pool's threads and returns its result to the awaiting task.
    ///
    /// - Parameters:
    ///   - key: whose work this is (a client address); waiting keys take turns.
    ///   - deadline: when the caller stops waiting; the work is dropped if a thread gets to it later.
    /// - Throws: `KDFQueueError` when the queue is full or the caller went away before the work started.
    func run<Result: Sendable>(
        key: String = "",
        deadline: ContinuousClock.Instant? = nil,
        _ work: @escaping @Sendable () throws -> Result
    ) async throws -> Result {
        let cancelled = CancelFlag()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let job = Job(
                    key: key, deadline: deadline, cancelled: cancelled,
                    run: { continuation.resume(with: Swift.Result { try work() }) },
                    drop: { continuation.resume(throwing: $0) })
                if let refusal = state.enqueue(job) { continuation.resume(throwing: refusal) }
            }
        } onCancel: {
            cancelled.set()
            // Still waiting: out of the queue at once, so abandoned work holds no place a live caller
            // needs. Already taken by a thread: that thread sees the flag and drops it.
            state.withdraw(key: key, cancelled)?.drop(.cancelled)
        }
    }

    /// Jobs waiting now (tests, metrics).
    var waiting: Int { state.waiting }
}

/// Why the pool did not run a job.
public enum KDFQueueError: Error, Equatable, Sendable {
    /// Too much work waits already (in all, or for this key): try again later.
    case full
    /// The caller's deadline passed before a thread was free.
    case deadlineExceeded
    /// The caller was cancelled before a thread was free.
    case cancelled
}

private struct Job: Sendable {
    let key: String
    let deadline: ContinuousClock.Instant?
    let cancelled: CancelFlag
    let run: @Sendable () -> Void
    let drop: @Sendable (KDFQueueError) -> Void
}

/// Set once, from the awaiting task's cancellation handler; read by the thread that picks the job up.
private final class CancelFlag: @unchecked Sendable {
    // @unchecked: `value` is only touched with `lock` held.
    private let lock = NSLock()
    private var value = false

    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}

/// The pool's job queue: a condition variable guards the waiting jobs and the running counts.
private final class WorkQueue: @unchecked Sendable {
    // @unchecked: every stored var is only touched with `condition` locked.
    private let condition = NSCondition()
    private let queueLimit: Int
    private let perKeyLimit: Int
    private let runningPerKey: Int
    private var jobs: [String: [Job]] = [:]
    /// Keys with waiting jobs, in the order they last got (or started waiting for) a turn.
    private var keys: [String] = []
    private var running: [String: Int] = [:]
    /// When each key with jobs waiting or running last got a thread (a serial number).
    private var lastServed: [String: Int] = [:]
    private var serial = 0
    private var count = 0

    init(queueLimit: Int, perKeyLimit: Int, runningPerKey: Int) {
        self.queueLimit = queueLimit
        self.perKeyLimit = perKeyLimit
        self.runningPerKey = runningPerKey
    }

    var waiting: Int {
        condition.lock()
        defer { condition.unlock() }
        return count
    }

    /// Queues `job`, or says why not (the caller resumes its continuation with it).
    func enqueue(_ job: Job) -> KDFQueueError? {
        condition.lock()
        defer { condition.unlock() }
        let mine = jobs[job.key, default: []]
        // The empty key is the process's own work (no client behind it): only the overall limit applies.
        guard count < queueLimit, job.key.isEmpty || mine.count < perKeyLimit else { return .full }
        if mine.isEmpty { keys.append(job.key) }
        jobs[job.key, default: []].append(job)
        count += 1
        // Every worker looks: the one woken by `signal` might be unable to take this key.
        condition.broadcast()
        return nil
    }

    /// Removes the waiting job whose cancellation flag is `flag`; nil when a thread already took it (or it
    /// was never queued).
    func withdraw(key: String, _ flag: CancelFlag) -> Job? {
        condition.lock()
        defer { condition.unlock() }
        guard var waiting = jobs[key], let index = waiting.firstIndex(where: { $0.cancelled === flag }) else {
            return nil
        }
        let job = waiting.remove(at: index)
        if waiting.isEmpty {
            jobs[key] = nil
            keys.removeAll { $0 == key }
            if running[key] == nil { lastServed[key] = nil }
        } else {
            jobs[key] = waiting
        }
        count -= 1
        return job
    }

    /// The next job: among the waiting keys below `runningPerKey`, the one with the fewest jobs running,
    /// then served least recently, then waiting longest; nil when no key may start one now.
    private func next() -> Job? {
        func rank(_ key: String) -> (Int, Int) { (running[key, default: 0], lastServed[key, default: -1]) }
        var best: Int?
        for index in keys.indices where running[keys[index], default: 0] < runningPerKey {
            if let current = best, rank(keys[current]) <= rank(keys[index]) { continue }
            best = index
        }
        guard let best else { return nil }
        let key = keys.remove(at: best)
        lastServed[key] = serial
        serial += 1
        var waiting = jobs[key]!
        let job = waiting.removeFirst()
        if waiting.isEmpty {
            jobs[key] = nil
        } else {
            jobs[key] = waiting
            keys.append(key)
        }
        count -= 1
        return job
    }

    /// A worker thread's loop: forever takes the next job and runs it outside the lock, or drops it when
    /// its caller is gone.
    func runWorker() {
        while true {
            condition.lock()
            var picked = next()
            while picked == nil {
                condition.wait()
                picked = next()
            }
            let job = picked!
            running[job.key, default: 0] += 1
            condition.unlock()
            if job.cancelled.isSet {
                job.drop(.cancelled)
            } else if let deadline = job.deadline, deadline <= .now {
                job.drop(.deadlineExceeded)
            } else {
                job.run()
            }
            condition.lock()
            running[job.key, default: 1] -= 1
            if running[job.key] == 0 {
                running[job.key] = nil
                if jobs[job.key] == nil { lastServed[job.key] = nil }
            }
            // This key may start another job now.
            if count > 0 { condition.broadcast() }
            condition.unlock()
        }
    }
}
