import Synchronization

/// `Synchronization.Mutex`, with its ordering restated where ThreadSanitizer can see it.
///
/// On Linux a contended `Mutex` sleeps and wakes in futex code that TSan does not instrument, so TSan misses the
/// happens-before edge from one critical section to the next and reports races on the state it protects that
/// cannot happen (seen with Swift 6.3.1, even on a plain counter). An acquiring load on entry and a releasing store
/// on exit, on an atomic of our own, restate that edge in instrumented code. They add no ordering the mutex does
/// not already give, and on x86 compile to plain moves. Services use it wherever they would use `Mutex`, so that
/// their tests run clean under TSan too.
///
/// Inlinable, so that each use is specialized for its value: unspecialized, making one and locking it
/// looked up generic metadata at run time, several times per RPC (a call's record holds three).
public struct TSanVisibleMutex<Value>: ~Copyable {
    @usableFromInline let mutex: Mutex<Value>
    @usableFromInline let edge = Atomic<Int>(0)

    @inlinable
    public init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with exclusive access to the value.
    @inlinable
    public borrowing func withLock<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        try mutex.withLock { value throws(Failure) in
            _ = edge.load(ordering: .acquiring)
            defer { edge.store(0, ordering: .releasing) }
            return try body(&value)
        }
    }
}

extension TSanVisibleMutex: Sendable {}
