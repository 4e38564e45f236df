import YediSync

/// Runs work in a task of its own and answers with its result, or with an error when the deadline
/// passes or the caller is cancelled, whichever comes first, without awaiting the work after that.
///
/// Why not a task group: a group waits for every child before it returns, and with postgres-nio 1.33.2
/// the next statement on a pooled connection whose backend was terminated inside a transaction never
/// completed, and cancelling its task did not end it (issue 31). A caller must get `UNAVAILABLE` within
/// `--database-timeout` all the same, so the work is cancelled and left to end on its own.
final class DeadlineRace<Value: Sendable>: Sendable {
    private enum State {
        case waiting
        case armed(CheckedContinuation<Value, any Error>)
        /// Answered (by the work, the timer or a cancellation) before or after the continuation was armed.
        case answered
    }

    private let state = TSanVisibleMutex<State>(.waiting)
    private let tasks = TSanVisibleMutex<[Task<Void, Never>]>([])
    private let early = TSanVisibleMutex<Result<Value, any Error>?>(nil)

    /// `work` runs in a new task; after `timeout`, `expired()` is the answer (it may look at how far the
    /// work got, and stop it from going further) and the work's task is cancelled. A cancelled caller gets
    /// `CancellationError`, after `expired()` was told all the same.
    static func run(
        timeout: Duration,
        expired: @escaping @Sendable () -> any Error,
        work: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let race = DeadlineRace<Value>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Cancelled before it began: answered already, nothing started.
                guard race.arm(continuation) else { return }
                let worker = Task {
                    let result: Result<Value, any Error>
                    do { result = .success(try await work()) } catch { result = .failure(error) }
                    race.answer(result)
                }
                let timer = Task {
                    do { try await Task.sleep(for: timeout) } catch { return }
                    race.answer(.failure(expired()))
                }
                race.track([worker, timer])
            }
        } onCancel: {
            _ = expired()
            race.answer(.failure(CancellationError()))
        }
    }

    /// False if the race was answered before (a cancellation): the continuation is resumed here then.
    private func arm(_ continuation: CheckedContinuation<Value, any Error>) -> Bool {
        let pending: Result<Value, any Error>? = state.withLock { state in
            switch state {
            case .waiting:
                state = .armed(continuation)
                return nil
            case .armed, .answered:
                // Cancelled before the continuation existed: answer it now.
                return early.withLock { $0 } ?? .failure(CancellationError())
            }
        }
        guard let pending else { return true }
        continuation.resume(with: pending)
        return false
    }

    private func track(_ started: [Task<Void, Never>]) {
        let finished = state.withLock { state -> Bool in
            if case .answered = state { return true }
            tasks.withLock { $0 = started }
            return false
        }
        if finished {
            for task in started { task.cancel() }
        }
    }

    /// The first answer wins; the others are dropped. Whoever answers cancels both tasks (a cancelled
    /// timer ends at once; the work's task ends when its await notices, or never, unawaited).
    private func answer(_ result: Result<Value, any Error>) {
        let continuation: CheckedContinuation<Value, any Error>? = state.withLock { state in
            switch state {
            case .waiting:
                early.withLock { $0 = result }
                state = .answered
                return nil
            case .armed(let continuation):
                state = .answered
                return continuation
            case .answered:
                return nil
            }
        }
        guard let continuation else { return }
        continuation.resume(with: result)
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }
}
