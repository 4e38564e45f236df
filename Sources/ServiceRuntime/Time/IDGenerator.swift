import Foundation
import NIOConcurrencyHelpers

/// Makes the ids of new rows (users, posts, reservations, outbox jobs).
///
/// Injected so tests get predictable ids; production ids are unguessable and sort by creation time.
public protocol IDGenerator: Sendable {
    func next() -> String
}

/// 26-character ids in Crockford base32: 48 bits of milliseconds from the clock, then 80 random bits
/// (the ULID layout). Sorting them sorts by creation time; guessing one is hopeless.
public struct RandomIDGenerator: IDGenerator {
    private let clock: any WallClock

    public init(clock: any WallClock = SystemClock()) {
        self.clock = clock
    }

    public func next() -> String {
        var generator = SystemRandomNumberGenerator()  // getrandom(2): cryptographically secure on Linux
        let milliseconds = UInt64(max(0, clock.nowMilliseconds)) & 0xFFFF_FFFF_FFFF
        let high = UInt16.random(in: .min ... .max, using: &generator)
        let low = UInt64.random(in: .min ... .max, using: &generator)
        // 128 bits: 48 time | 16 random | 64 random, written as 26 base32 digits (the first holds 3 bits).
        let upper = (milliseconds << 16) | UInt64(high)
        var digits = [UInt8](repeating: 0, count: 26)
        for index in 0..<26 {
            let bitOffset = 125 - index * 5  // the lowest bit of this digit, counted from the right
            let value: UInt64
            if bitOffset >= 64 {
                value = (upper >> UInt64(bitOffset - 64)) & 0x1F
            } else if bitOffset > 59 {
                let fromUpper = (upper << UInt64(64 - bitOffset)) & 0x1F
                value = fromUpper | (low >> UInt64(bitOffset))
            } else {
                value = (low >> UInt64(bitOffset)) & 0x1F
            }
            digits[index] = Self.alphabet[Int(value & 0x1F)]
        }
        return String(decoding: digits, as: UTF8.self)
    }

    private static let alphabet = Array("0123456789abcdefghjkmnpqrstvwxyz".utf8)
}

/// `prefix-1`, `prefix-2`, …: ids a test can name in advance.
public final class SequentialIDGenerator: IDGenerator {
    private let prefix: String
    private let counter = NIOLockedValueBox(0)

    public init(prefix: String = "id") {
        self.prefix = prefix
    }

    public func next() -> String {
        let value = counter.withLockedValue {
            $0 += 1
            return $0
        }
        return "\(prefix)-\(value)"
    }
}
