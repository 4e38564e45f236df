import ArgumentParser
import Dispatch
import Synchronization

/// What a task per call costs by itself: `Task.immediate` made, run to its end without suspending, and
/// released, in a loop on one thread, with and without an executor preference (`floortask` and RPCCore
/// use one: a handler that suspends resumes on its connection's loop).
///
/// This is the least a task per call can add to the transport's own cost per call, with warm caches
/// and nothing else in the closure, so it bounds what `floortask` / `floor` can reach:
///
///     echo-bench task-cost --count 2000000
struct TaskCost: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "task-cost",
        abstract: "Nanoseconds per Task.immediate that runs to its end, with and without an executor preference."
    )

    @Option(help: "Tasks per measurement.") var count = 2_000_000
    @Option(help: "Measurements of each kind; the lowest is printed.") var rounds = 3

    func run() async throws {
        let executor = NoSuspensionExecutor()
        var best: (preferred: Double, plain: Double) = (.infinity, .infinity)
        for _ in 0..<rounds {
            best.preferred = min(best.preferred, Self.measure(count: count, executor: executor))
            best.plain = min(best.plain, Self.measure(count: count, executor: nil))
        }
        print(
            "{\"bench\":\"task-cost\",\"count\":\(count),"
                + "\"ns_per_task_with_executor_preference\":\(Int(best.preferred.rounded())),"
                + "\"ns_per_task_without\":\(Int(best.plain.rounded()))}"
        )
    }

    private static let sink = Atomic<Int>(0)

    private static func measure(count: Int, executor: NoSuspensionExecutor?) -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        for index in 0..<count {
            if let executor {
                Task.immediate(executorPreference: executor) { sink.add(await answer(index), ordering: .relaxed) }
            } else {
                Task.immediate { sink.add(await answer(index), ordering: .relaxed) }
            }
        }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(count)
    }

    /// Async, so that the task is a real one, as a handler's is; it never suspends.
    @inline(never)
    private static func answer(_ value: Int) async -> Int { value &+ 1 }
}

/// A preference that is never used: the tasks measured never suspend, so nothing is ever enqueued.
private final class NoSuspensionExecutor: TaskExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        fatalError("a measured task suspended")
    }
}
