/// Wakes the outbox worker when a job was committed, so delivery starts at once instead of at the next poll.
///
/// Signals coalesce (one pending wake-up at most): the worker reads every due job when it wakes.
///
/// The timeout is a wake-up the waiter posts to itself, never a cancellation of the wait: cancelling a
/// task that awaits an `AsyncStream`'s `next()` finishes the stream, after which every wait returned at
/// once and the worker polled its database in a loop, a whole core from the first timeout on.
final class WakeUpSignal: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    func signal() {
        continuation.yield()
    }

    /// Returns at the next signal (or a pending one), or after `timeout`, or when the task is cancelled
    /// (which ends the signal for good: only the worker's own shutdown does that).
    func wait(timeout: Duration) async {
        let continuation = self.continuation
        let timer = Task {
            do {
                try await Task.sleep(for: timeout)
                continuation.yield()
            } catch {}
        }
        var iterator = stream.makeAsyncIterator()
        _ = await iterator.next()
        timer.cancel()
    }
}
