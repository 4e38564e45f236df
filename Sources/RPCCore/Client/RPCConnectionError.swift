import NIOCore
import NIOPosix
import RPCTLS

#if canImport(Glibc)
    import Glibc
#endif

/// Why a client could not get a connection, told apart for tools that report each case differently.
public struct RPCConnectionError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The TLS handshake failed (certificate not trusted, name mismatch, protocol refused, …).
        case tls
        /// Nothing listens at the address.
        case refused
        /// No connection within the time allowed.
        case timedOut
        /// Anything else (no route, DNS, …).
        case unreachable
    }

    public let kind: Kind
    public let target: String
    /// One line, with OpenSSL's reason for TLS failures.
    public let message: String
    /// The TLS error, for `.tls`.
    public let tlsError: TLSError?

    init(target: String, cause: (any Error)?, timedOut: Bool) {
        self.target = target
        switch (cause, cause.flatMap(Self.tlsError(in:))) {
        case (_, let error?):
            kind = .tls
            tlsError = error
            message = "TLS handshake with \(target) failed: \(error.reason)"
        case (let error?, nil) where Self.isRefused(error):
            kind = .refused
            tlsError = nil
            message = "connection refused by \(target)"
        case (let error?, nil):
            kind = timedOut ? .timedOut : .unreachable
            tlsError = nil
            message = "cannot connect to \(target): \(error)"
        case (nil, _):
            kind = .timedOut
            tlsError = nil
            message = "no connection to \(target) within the timeout"
        }
    }

    /// The TLS error itself, or one NIO's connect wrapped (TLS set-up that failed in the channel
    /// initializer, such as a server name OpenSSL refuses).
    private static func tlsError(in error: any Error) -> TLSError? {
        if let error = error as? TLSError { return error }
        if let error = error as? NIOConnectionError {
            return error.connectionErrors.lazy.compactMap { $0.error as? TLSError }.first
        }
        return nil
    }

    private static func isRefused(_ error: any Error) -> Bool {
        if let error = error as? IOError { return error.errnoCode == ECONNREFUSED }
        if let error = error as? NIOConnectionError {
            return error.connectionErrors.contains { ($0.error as? IOError)?.errnoCode == ECONNREFUSED }
        }
        return "\(error)".contains("Connection refused")
    }

    public var description: String { message }
}
