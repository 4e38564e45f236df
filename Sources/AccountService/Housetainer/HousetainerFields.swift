import Foundation
import RPCCore
import ServiceRuntime

/// Housetainer's field rules beyond the shared ones (docs/housetainer.md), each refusing with
/// `INVALID_ARGUMENT` naming the field.
enum HousetainerFields {
    /// An invitation code: exactly 8 ASCII digits.
    static func code(_ value: String, field: String = "code") throws(RPCError) -> String {
        guard value.utf8.count == 8, value.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw FieldRule.invalid(field, "8 digits")
        }
        return value
    }

    static let maxNicknameCharacters = 10

    /// 1–10 Hangul syllables or Latin letters after NFC (no spaces, digits, symbols or emoji), none of the
    /// app's banned words. Uniqueness is the account's index.
    static func nickname(_ value: String, app: AppConfiguration?, field: String = "nickname") throws(RPCError)
        -> String
    {
        let nickname = value.precomposedStringWithCanonicalMapping
        guard !nickname.isEmpty else { throw FieldRule.invalid(field, "required") }
        guard nickname.count <= maxNicknameCharacters else {
            throw FieldRule.invalid(field, "at most \(maxNicknameCharacters) letters")
        }
        guard nickname.unicodeScalars.allSatisfy(isNicknameScalar) else {
            throw FieldRule.invalid(field, "Hangul or Latin letters only")
        }
        guard app?.nicknameIsBanned(nickname) != true else {
            throw FieldRule.invalid(field, "this nickname can't be used")
        }
        return nickname
    }

    /// `가`–`힣` or `A-Z a-z`.
    private static func isNicknameScalar(_ scalar: Unicode.Scalar) -> Bool {
        (0xAC00...0xD7A3).contains(scalar.value) || (0x41...0x5A).contains(scalar.value)
            || (0x61...0x7A).contains(scalar.value)
    }

    /// `^[A-Za-z0-9._]{1,30}$`.
    static func instagramID(_ value: String, field: String = "instagram_id") throws(RPCError) -> String {
        guard (1...30).contains(value.utf8.count),
            value.utf8.allSatisfy({
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2E
                    || $0 == 0x5F
            })
        else { throw FieldRule.invalid(field, "1 to 30 letters, digits, dots or underscores") }
        return value
    }

    /// The documents a signup accepts: each kind once, all of `required`, versions 1–32 printable bytes.
    static func terms(_ accepted: [(kind: String, version: String)], required: [String]) throws(RPCError)
        -> [String: String]
    {
        var terms: [String: String] = [:]
        for (kind, version) in accepted {
            guard required.contains(kind) else {
                throw FieldRule.invalid(
                    "accepted_terms", "\"\(kind)\" is not one of \(required.joined(separator: ", "))")
            }
            guard terms[kind] == nil else { throw FieldRule.invalid("accepted_terms", "\(kind) given twice") }
            guard (1...32).contains(version.utf8.count), version.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw FieldRule.invalid("accepted_terms", "\(kind): a version of 1 to 32 printable characters")
            }
            terms[kind] = version
        }
        if let missing = required.first(where: { terms[$0] == nil }) {
            throw FieldRule.invalid("accepted_terms", "\(missing) must be accepted")
        }
        return terms
    }
}
