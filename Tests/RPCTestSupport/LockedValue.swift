import NIOConcurrencyHelpers

/// A value shared between test tasks.
public final class LockedValue<Value: Sendable>: Sendable {
    private let box: NIOLockedValueBox<Value>

    public init(_ value: Value) { box = NIOLockedValueBox(value) }

    public var value: Value { box.withLockedValue { $0 } }

    public func withLock<T>(_ body: (inout Value) -> T) -> T { box.withLockedValue { body(&$0) } }
}
