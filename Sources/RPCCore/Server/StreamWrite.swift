import YediSync

/// One `send` of a stream message. Cancelling it reaches this write and no other task's: the connection
/// resumes a waiting write only for the `StreamWrite` it was installed with. A task cancelled before its
/// write reached the event loop finds it cancelled there and does not wait.
final class StreamWrite: Sendable {
    private let cancelled = TSanVisibleMutex(false)

    var isCancelled: Bool { cancelled.withLock { $0 } }

    func cancel() {
        cancelled.withLock { $0 = true }
    }
}
