import Foundation
import RPCCore

/// The field checks every handler shares, each failing with `INVALID_ARGUMENT` naming the field.
///
/// The protos bound every received field in bytes before a handler runs (`max_bytes`, the generated
/// table in docs/services.md); these add what the product means: an id that is present, text trimmed and
/// counted in characters (grapheme clusters, as a user counts them). Service-specific rules (an email,
/// a schedule) live beside each service's handlers and build on these.
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
}
