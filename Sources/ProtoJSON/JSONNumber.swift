/// Conversions between JSON number text and protobuf's numeric types, exact where `Double` is not.
///
/// proto3 JSON allows an int64 as `"9223372036854775807"`, `9223372036854775807` or `9.223372036854775807e18`;
/// going through `Double` would round all three. Integers are therefore read digit by digit: a literal is
/// accepted when its exact decimal value is a whole number in range (`1e3` and `1.0` yes, `1.5` and `1e-1` no).
enum JSONNumber {
    enum IntegerReading: Equatable {
        case value(Int128)
        /// The text is not an RFC 8259 number (`"0x10"`, `"+1"`, `" 1"`, `"abc"`).
        case notANumber
        /// A whole number, but beyond ±2^64: no protobuf integer type could hold it.
        case outOfRange
        case notAnInteger
    }

    /// The exact integer a number literal denotes, if it is one.
    static func integer(_ literal: String) -> IntegerReading {
        guard let decimal = Decimal(literal) else { return .notANumber }
        var digits = ArraySlice(decimal.digits.drop { $0 == 0 })
        var exponent = decimal.exponent
        guard !digits.isEmpty else { return .value(0) }
        while digits.last == 0 {
            digits.removeLast()
            exponent += 1
        }
        if exponent < 0 { return .notAnInteger }
        if digits.count + exponent > 20 { return .outOfRange }
        var magnitude: UInt64 = 0
        for digit in digits + repeatElement(0, count: exponent) {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit))
            if overflow1 || overflow2 { return .outOfRange }
            magnitude = sum
        }
        return .value(decimal.isNegative ? -Int128(magnitude) : Int128(magnitude))
    }

    /// Whether `text` is an RFC 8259 number; `Double(_:)` alone would also take `inf`, `0x1p3` and `1.`.
    static func isValid(_ text: String) -> Bool { Decimal(text) != nil }

    /// The shortest text that reads back as the same value (Swift's `description` is shortest round-trip),
    /// without a `.0` on whole numbers, which is how protobuf's own JSON printers write them.
    static func literal<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F) -> String {
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return text
    }

    /// A number literal taken apart: value = ±digits × 10^exponent.
    private struct Decimal {
        var isNegative = false
        /// Every digit of the integer and fraction parts, as 0...9.
        var digits: [UInt8] = []
        /// Saturates far beyond anything that fits a `Double`, so `1e99999999999999999999` cannot overflow.
        var exponent = 0

        init?(_ text: String) {
            let bytes = Array(text.utf8)
            var index = 0
            func digit(at position: Int) -> UInt8? {
                guard position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9")
                else { return nil }
                return bytes[position] - UInt8(ascii: "0")
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
                isNegative = true
                index += 1
            }
            guard let first = digit(at: index) else { return nil }
            digits.append(first)
            index += 1
            if first != 0 {
                while let next = digit(at: index) {
                    digits.append(next)
                    index += 1
                }
            }
            var fractionDigits = 0
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digit(at: index) != nil else { return nil }
                while let next = digit(at: index) {
                    digits.append(next)
                    fractionDigits += 1
                    index += 1
                }
            }
            var writtenExponent = 0
            if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
                index += 1
                var negativeExponent = false
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    negativeExponent = bytes[index] == UInt8(ascii: "-")
                    index += 1
                }
                guard digit(at: index) != nil else { return nil }
                while let next = digit(at: index) {
                    writtenExponent = min(writtenExponent * 10 + Int(next), 1_000_000_000)
                    index += 1
                }
                if negativeExponent { writtenExponent = -writtenExponent }
            }
            guard index == bytes.count else { return nil }
            exponent = writtenExponent - fractionDigits
        }
    }
}
