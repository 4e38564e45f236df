import Foundation
import NIOConcurrencyHelpers

/// The time of day as a service sees it: what it stores, shows and compares deadlines against.
///
/// Injected everywhere instead of calling `Date()`, so tests run on a fixed clock and an end-to-end test
/// can move a development process's clock forward (`AdjustableClock`). Timeouts and sleeps use
/// `ContinuousClock`, which no one moves.
public protocol WallClock: Sendable {
    var now: Date { get }
}

extension WallClock {
    /// Milliseconds since 1970, the unit the protos carry.
    public var nowMilliseconds: Int64 { Int64((now.timeIntervalSince1970 * 1_000).rounded(.down)) }
}

/// A clock that tests or a development process move: who sleeps until a wall-clock time (the
/// scheduler) asks to be told, so that moving the clock runs what became due at once.
public protocol MovableClock: WallClock {
    func whenMoved(_ action: @escaping @Sendable () -> Void)
}

/// The observers of a `MovableClock`.
final class ClockObservers: Sendable {
    private let actions = NIOLockedValueBox<[@Sendable () -> Void]>([])

    func add(_ action: @escaping @Sendable () -> Void) {
        actions.withLockedValue { $0.append(action) }
    }

    func moved() {
        for action in actions.withLockedValue({ $0 }) { action() }
    }
}

/// The machine's clock.
public struct SystemClock: WallClock {
    public init() {}
    public var now: Date { Date() }
}

/// A clock that stands still until told to move: tests set the time they need.
public final class ManualClock: MovableClock {
    private let current: NIOLockedValueBox<Date>
    private let observers = ClockObservers()

    public init(_ start: Date = Date(timeIntervalSince1970: 1_790_000_000)) {
        current = NIOLockedValueBox(start)
    }

    public var now: Date { current.withLockedValue { $0 } }

    public func set(_ date: Date) {
        current.withLockedValue { $0 = date }
        observers.moved()
    }

    public func advance(by seconds: TimeInterval) {
        current.withLockedValue { $0 += seconds }
        observers.moved()
    }

    public func whenMoved(_ action: @escaping @Sendable () -> Void) {
        observers.add(action)
    }
}

/// Another clock plus an offset that only grows: a development process started with `--dev-clock` can be
/// moved forward (so "a reservation whose time has passed" is reachable without waiting), never back.
public final class AdjustableClock: MovableClock {
    private let base: any WallClock
    private let offset = NIOLockedValueBox<TimeInterval>(0)
    private let observers = ClockObservers()

    public init(base: any WallClock = SystemClock()) {
        self.base = base
    }

    public var now: Date { base.now + offset.withLockedValue { $0 } }

    public var offsetSeconds: TimeInterval { offset.withLockedValue { $0 } }

    /// Moves the clock forward by `seconds` (> 0) and returns the new offset.
    @discardableResult
    public func advance(by seconds: TimeInterval) -> TimeInterval {
        precondition(seconds > 0, "the clock only moves forward")
        let moved = offset.withLockedValue {
            $0 += seconds
            return $0
        }
        observers.moved()
        return moved
    }

    public func whenMoved(_ action: @escaping @Sendable () -> Void) {
        observers.add(action)
    }
}
