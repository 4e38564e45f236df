import Foundation

/// Where a credential comes from: its value (an environment variable read at start) or a file read at
/// each use, so an operator rotates a key, or refreshes an hour-long access token, by rewriting the file
/// without a restart.
public enum SecretSource: Sendable, CustomStringConvertible {
    case value(Secret)
    case file(String)

    /// The credential now; a file must be readable UTF-8 text of at most 64 KiB (whitespace around it is
    /// dropped). The error names the file, never its content.
    public func read() throws -> Secret {
        switch self {
        case .value(let secret):
            return secret
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path), data.count <= 64 * 1_024,
                let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines),
                !text.isEmpty
            else { throw SecretFileError(path: path) }
            return Secret(text)
        }
    }

    public var description: String {
        switch self {
        case .value: "<secret from the environment>"
        case .file(let path): "<secret in \(path)>"
        }
    }
}

/// A credential file that cannot be used: missing, unreadable, empty, not text, or over 64 KiB.
public struct SecretFileError: Error, CustomStringConvertible {
    public var path: String
    public var description: String { "\(path) is not a readable, non-empty text file of at most 64 KiB" }
}
