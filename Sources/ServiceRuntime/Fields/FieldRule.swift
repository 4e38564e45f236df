import Foundation
import RPCCore

/// The field checks every handler shares, each failing with `INVALID_ARGUMENT` naming the field
/// (docs/services.md, "Field rules").
///
/// The protos bound every received field in bytes before a handler runs (`max_bytes`, the generated
/// table in docs/services.md); these add what the product means: ids that are present, names and free
/// text trimmed and counted in characters (grapheme clusters, as a user counts them), emails, Korean
/// phone numbers, ids of our own images, enum values a client may send, batches of ids. Rules that are
/// one service's domain (a shop, a schedule, a review's keywords) live beside its handlers and build on
/// these; page sizes are `PageList`'s.
public enum FieldRule {
    /// The most bytes an id may have, as the protos declare for every id field.
    public static let maxIDBytes = 128

    /// `field: problem`, the one shape of a refused field.
    public static func invalid(_ field: String, _ problem: String) -> RPCError {
        RPCError(code: .invalidArgument, message: "\(field): \(problem)")
    }

    /// A required id of at most `maxIDBytes` bytes.
    public static func id(_ value: String, field: String) throws(RPCError) -> String {
        guard !value.isEmpty else { throw invalid(field, "required") }
        guard value.utf8.count <= maxIDBytes else { throw invalid(field, "at most \(maxIDBytes) bytes") }
        return value
    }

    /// `value` trimmed of spaces and newlines, at most `maxCharacters` characters; when `required`, not
    /// empty.
    public static func text(_ value: String, field: String, maxCharacters: Int, required: Bool) throws(RPCError)
        -> String
    {
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        if required, trimmed.isEmpty { throw invalid(field, "required") }
        let characters = trimmed.count
        guard characters <= maxCharacters else {
            throw invalid(field, "at most \(maxCharacters) characters (got \(characters))")
        }
        return trimmed
    }

    /// A name a person gives (a user's, a shop's, a nickname): trimmed, required, at most `maxCharacters`
    /// characters, no control characters.
    public static func name(_ value: String, field: String, maxCharacters: Int = 50) throws(RPCError) -> String {
        let name = try text(value, field: field, maxCharacters: maxCharacters, required: true)
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw invalid(field, "control characters are not allowed")
        }
        return name
    }

    /// Lowercased. A pragmatic check (one @, a dot in the domain, no spaces, 254 bytes with a local part
    /// of at most 64), not RFC 5322: the mailed code proves the address.
    public static func email(_ value: String, field: String = "email") throws(RPCError) -> String {
        let email = value.trimmingCharacters(in: .whitespaces).lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 64,
            parts[1].contains("."), !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
            !email.contains(where: { $0.isWhitespace || $0.isNewline })
        else { throw invalid(field, "not an email address") }
        return email
    }

    /// An http or https URL with a host, trimmed: links a client may show and open (never `javascript:`
    /// or another scheme).
    public static func webURL(_ value: String, field: String) throws(RPCError) -> String {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard let url = URL(string: trimmed), let scheme = url.scheme?.lowercased(),
            ["http", "https"].contains(scheme),
            let host = url.host, !host.isEmpty
        else { throw invalid(field, "an http(s) URL") }
        return trimmed
    }

    /// A Korean mobile number, as digits: 01[016789] + 3–4 + 4 digits; hyphens and spaces are dropped.
    public static func mobilePhone(_ value: String, field: String = "phone") throws(RPCError) -> String {
        let digits = value.filter { $0 != "-" && $0 != " " }
        guard digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), digits.count == 10 || digits.count == 11,
            digits.hasPrefix("01"), "016789".contains(digits[digits.index(digits.startIndex, offsetBy: 2)])
        else { throw invalid(field, "not a Korean mobile number (01X-XXXX-XXXX)") }
        return digits
    }

    /// A Korean mobile number (as `mobilePhone` reads it) in E.164, the form a number is verified and
    /// stored in as an identity: `010-1234-5678` → `+821012345678` (the leading 0 dropped).
    public static func mobilePhoneE164(_ value: String, field: String = "phone") throws(RPCError) -> String {
        "+82" + (try mobilePhone(value, field: field)).dropFirst()
    }

    /// A Korean number, mobile or landline, as digits: 9–11 starting with 0.
    public static func phone(_ value: String, field: String) throws(RPCError) -> String {
        let digits = value.filter { $0 != "-" && $0 != " " }
        guard digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), (9...11).contains(digits.count),
            digits.hasPrefix("0")
        else { throw invalid(field, "not a Korean phone number") }
        return digits
    }

    /// An id of one of ContentService's images, or "" for none: its shape only (ContentService owns the
    /// images); how other services refer to a picture, never by a URL a client made up.
    public static func imageID(_ value: String, field: String) throws(RPCError) -> String {
        guard value.utf8.count <= maxIDBytes,
            value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else { throw invalid(field, "not an image id") }
        return value
    }

    /// An enum value a client may send: one of `allowed` (never the proto's `UNSPECIFIED` zero, nor a
    /// number this build does not know); `names` says the choices in the refusal.
    public static func choice<Value: Equatable>(
        _ value: Value, field: String, allowed: [Value], names: String
    ) throws(RPCError) -> Value {
        guard allowed.contains(value) else { throw invalid(field, "choose \(names)") }
        return value
    }

    /// An internal batch of ids: at most `maximum`, duplicates dropped (order kept).
    public static func batch(_ ids: [String], field: String, maximum: Int = 100) throws(RPCError) -> [String] {
        guard ids.count <= maximum else { throw invalid(field, "at most \(maximum) ids") }
        var seen = Set<String>()
        return ids.filter { seen.insert($0).inserted }
    }
}
