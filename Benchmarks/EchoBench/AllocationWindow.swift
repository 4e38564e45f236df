import ArgumentParser
import CAllocationCounter
import Foundation
import Synchronization

/// Server allocations and CPU time per call, counted in the server process alone (the client runs apart): the
/// allocator is replaced by `CAllocationCounter`, counting starts `delay` seconds after the server and
/// lasts `window` seconds, and the figure goes to standard error. Run a client through the whole window.
///
///     echo-bench server --count-allocations 3 &   # then a client for ≥ 5 s
///
/// Counts every allocation of the process in the window (the event loop, TLS, the handlers), divided
/// by the calls answered in it. Load on the machine changes how many calls fit in the window, not the
/// allocations each makes, so the figure is usable on a busy machine where throughput is not.
final class AllocationWindow: Sendable {
    private let calls = Atomic<Int>(0)
    private let counting = Atomic<Bool>(false)

    /// Counts a call answered (any thread).
    func callAnswered() {
        if counting.load(ordering: .relaxed) { calls.add(1, ordering: .relaxed) }
    }

    /// Starts the window after `delay` seconds, reports after `window` more, on a thread of its own.
    func start(delay: Double, window: Double, label: String) {
        Thread.detachNewThread { [self] in
            Thread.sleep(forTimeInterval: delay)
            let cpuBefore = Self.processCPUSeconds()
            yedi_allocations_start()
            counting.store(true, ordering: .relaxed)
            Thread.sleep(forTimeInterval: window)
            counting.store(false, ordering: .relaxed)
            let allocations = yedi_allocations_stop()
            let cpu = Self.processCPUSeconds() - cpuBefore
            let answered = calls.load(ordering: .relaxed)
            let perCall = answered > 0 ? Double(allocations) / Double(answered) : 0
            let cpuPerCall = answered > 0 ? cpu / Double(answered) * 1e6 : 0
            FileHandle.standardError.write(
                Data(
                    ("\(label): \(String(format: "%.2f", perCall)) allocations and "
                        + "\(String(format: "%.2f", cpuPerCall)) µs of CPU per call "
                        + "(\(allocations) allocations, \(answered) calls, \(window) s)\n").utf8))
        }
    }
}

extension AllocationWindow {
    /// The process's CPU time (user and system, every thread).
    static func processCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

/// The servers' `--count-allocations SECONDS` and `--allocation-delay SECONDS`.
struct AllocationOptions: ParsableArguments {
    @Option(help: "Print server allocations per call over this many seconds (a client must run through it).")
    var countAllocations: Double?
    @Option(help: "With --count-allocations: seconds to wait before counting (warm-up).")
    var allocationDelay = 2.0

    /// The window, started, when asked for.
    func window(label: String) -> AllocationWindow? {
        guard let countAllocations else { return nil }
        let window = AllocationWindow()
        window.start(delay: allocationDelay, window: countAllocations, label: label)
        return window
    }
}
