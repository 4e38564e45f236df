/// Makes W3C trace and span ids (lowercase hex, never all zeros). Injected so tests are deterministic.
public struct TraceIDGenerator: Sendable {
    private let randomBytes: @Sendable (Int) -> [UInt8]

    /// - Parameter randomBytes: returns that many random bytes.
    public init(randomBytes: @escaping @Sendable (Int) -> [UInt8]) {
        self.randomBytes = randomBytes
    }

    /// Ids from the system's secure random source.
    public static let system = TraceIDGenerator { count in
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// 32 hex digits.
    public func traceID() -> String { hex(bytes: 16) }

    /// 16 hex digits.
    public func spanID() -> String { hex(bytes: 8) }

    private func hex(bytes: Int) -> String {
        var values = randomBytes(bytes)
        if values.allSatisfy({ $0 == 0 }) { values[values.count - 1] = 1 }
        return values.map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
