import Foundation
import RPCCore
import ServiceRuntime

/// Zipadoo's field rules (docs/zipadoo.md), each failing with `INVALID_ARGUMENT` naming the field.
enum ZipadooFields {
    /// `^[A-Za-z0-9가-힣]{2,6}$`: 2 to 6 Latin letters, digits or Hangul syllables, nothing else.
    static func nickname(_ value: String, field: String = "nickname") throws(RPCError) -> String {
        let scalars = value.unicodeScalars
        guard (2...6).contains(scalars.count),
            scalars.allSatisfy({ scalar in
                switch scalar.value {
                case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0xAC00...0xD7A3: true
                default: false
                }
            })
        else { throw FieldRule.invalid(field, "2 to 6 Hangul, Latin letters or digits") }
        return value
    }

    /// `01[0-9]` + 3–4 + 4 digits, hyphens and spaces allowed; kept as digits.
    static func phone(_ value: String, field: String = "phone") throws(RPCError) -> String {
        let digits = value.filter { $0 != "-" && $0 != " " }
        guard digits.allSatisfy({ $0.isASCII && $0.isNumber }), digits.count == 10 || digits.count == 11,
            digits.hasPrefix("01")
        else { throw FieldRule.invalid(field, "not a mobile number (01X-XXX(X)-XXXX)") }
        return digits
    }

    /// One of the app's avatars, `doo1` … `doo9`.
    static func mole(_ value: String, field: String = "mole") throws(RPCError) -> String {
        guard value.count == 4, value.hasPrefix("doo"), let digit = value.last, ("1"..."9").contains(digit) else {
            throw FieldRule.invalid(field, "one of doo1 … doo9")
        }
        return value
    }
}
