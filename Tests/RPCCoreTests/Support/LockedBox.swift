import Foundation

/// A value behind a lock, for test helpers shared with reader threads and event loops.
///
/// An `NSLock` (a pthread mutex) rather than `Synchronization.Mutex`: ThreadSanitizer intercepts
/// pthread locks, but not the stdlib's futex-based Mutex, and reports false races through it.
final class LockedBox<Value>: @unchecked Sendable {
    // @unchecked: every access to `value` holds `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        self.lock.lock()
        defer { self.lock.unlock() }
        return try body(&self.value)
    }
}
