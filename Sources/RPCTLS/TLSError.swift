/// A failure of the TLS layer, typed so the layer above can react to the *kind* and log the *reason*.
///
/// `reason` carries OpenSSL's own words (for example "certificate verify failed: unable to get local
/// issuer certificate"), because those are what an operator will search for.
public struct TLSError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, coarse enough to switch on.
    public enum Kind: Sendable, Hashable {
        /// A ``TLSContext`` or handler could not be set up: unreadable file, bad PEM, key not matching
        /// the certificate, an invalid setting.
        case configuration
        /// The handshake failed: no common protocol or cipher, an alert from the peer, not TLS at all,
        /// or the connection closed before the handshake finished.
        case handshakeFailed
        /// The peer's certificate was rejected: untrusted chain, expired, or not valid for the name.
        case certificateVerificationFailed
        /// The handshake did not complete within the configured time; the connection was closed.
        case handshakeTimeout
        /// The connection ended without the peer's `close_notify` (a ragged EOF). Data may have been
        /// truncated; whether that matters is for the layer above to judge (it knows its framing).
        case uncleanShutdown
        /// A failure after the handshake: a fatal alert from the peer or a record that does not decrypt.
        case protocolFailure
    }

    public var kind: Kind
    /// OpenSSL's reason string(s), or ours when OpenSSL had none.
    public var reason: String
    /// The raw OpenSSL error queue drained after the failure, oldest first ("error:0A000086:SSL routines::…").
    public var openSSLErrors: [String]
    /// The file a configuration error is about, if any.
    public var file: String?

    public init(kind: Kind, reason: String, openSSLErrors: [String] = [], file: String? = nil) {
        self.kind = kind
        self.reason = reason
        self.openSSLErrors = openSSLErrors
        self.file = file
    }

    public var description: String {
        var text = "TLSError.\(self.kind): \(self.reason)"
        if let file = self.file {
            text += " (file: \(file))"
        }
        return text
    }
}
