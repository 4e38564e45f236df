import COpenSSL

/// A cryptographic operation failed: bad key material, a malformed encoding, or (rarely) OpenSSL itself.
///
/// The message says what was being done; for OpenSSL failures it carries OpenSSL's own reason, so logs
/// explain *why* (a PEM that is not Ed25519, say) without anyone reaching for a debugger.
public struct CryptoError: Error, CustomStringConvertible, Sendable {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }

    /// `operation` failed inside OpenSSL: drains OpenSSL's thread-local error queue into the message, so
    /// a stale entry can never be blamed on a later, unrelated call.
    static func openSSL(_ operation: String) -> CryptoError {
        let reasons = drainOpenSSLErrors()
        return CryptoError(reasons.isEmpty ? "\(operation) failed" : "\(operation) failed: \(reasons)")
    }

    /// Empties OpenSSL's error queue, returning its entries as one line.
    @discardableResult
    static func drainOpenSSLErrors() -> String {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return reasons.joined(separator: "; ")
    }
}
