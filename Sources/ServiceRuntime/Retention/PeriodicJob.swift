import Logging
import ServiceLifecycle

/// A background service that runs `work` at start and then every `period` until shutdown: the pruning
/// and collection jobs. What the work deletes is decided by the injected `WallClock` it reads; the period
/// is real time (`ContinuousClock`), so tests call `runOnce()` on a manual clock instead of waiting.
///
/// A failed run is logged and retried next period: nothing it deletes is urgent.
public final class PeriodicJob: Service, Sendable {
    public let name: String
    public let period: Duration
    private let logger: Logger
    private let work: @Sendable () async throws -> Int

    /// `work` answers how many rows it removed (logged when not zero).
    public init(name: String, period: Duration, logger: Logger, work: @escaping @Sendable () async throws -> Int) {
        self.name = name
        self.period = period
        self.logger = logger
        self.work = work
    }

    /// One run; answers what `work` removed, or nil (logged) if it failed.
    @discardableResult
    public func runOnce() async -> Int? {
        do {
            let removed = try await work()
            if removed > 0 { logger.info("\(name): removed \(removed)") }
            return removed
        } catch {
            logger.warning("\(name) failed; trying again in \(period)", metadata: ["error": "\(error)"])
            return nil
        }
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.runOnce()
                try? await Task.sleep(for: self.period)
            }
        }
    }
}
