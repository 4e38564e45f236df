import NIOConcurrencyHelpers

/// Makes the short codes a person types from a message (a mailed sign-up code; SMS codes later).
///
/// Injected like `IDGenerator`, so a test can know a code in advance; production codes come from the
/// operating system's secure random source.
public protocol VerificationCodeGenerator: Sendable {
    /// Six decimal digits.
    func next() -> String
}

/// Uniform over 000000–999999, from getrandom(2).
public struct RandomVerificationCodes: VerificationCodeGenerator {
    public init() {}

    public func next() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = UInt32.random(in: 0..<1_000_000, using: &generator)
        let digits = String(value)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }
}

/// The codes a test lists, in order, then the last one again.
public final class FixedVerificationCodes: VerificationCodeGenerator {
    private let codes: NIOLockedValueBox<[String]>

    public init(_ codes: [String]) {
        precondition(!codes.isEmpty)
        self.codes = NIOLockedValueBox(codes)
    }

    public func next() -> String {
        codes.withLockedValue { $0.count > 1 ? $0.removeFirst() : $0[0] }
    }
}
