/// Wakes the outbox worker when a job was committed, so delivery starts at once instead of at the next poll.
///
/// Signals coalesce (one pending wake-up at most): the worker reads every due job when it wakes.
final class WakeUpSignal: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    func signal() {
        continuation.yield()
    }

    /// Returns at the next signal (or a pending one), or after `timeout`, or when the task is cancelled.
    func wait(timeout: Duration) async {
        let stream = self.stream
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var iterator = stream.makeAsyncIterator()
                _ = await iterator.next()
            }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }
}
