/// What a completed handshake negotiated, and with whom.
public struct TLSHandshakeInfo: Sendable, Hashable {
    public var protocolVersion: TLSProtocolVersion
    /// The IANA name of the cipher suite, e.g. "TLS_AES_128_GCM_SHA256".
    public var cipherSuite: String
    /// The ALPN protocol both ends agreed on; `nil` when the peer offered none.
    public var applicationProtocol: String?
    /// The peer's verified certificate identity; `nil` when it presented no certificate.
    public var peerIdentity: PeerIdentity?

    public init(
        protocolVersion: TLSProtocolVersion,
        cipherSuite: String,
        applicationProtocol: String?,
        peerIdentity: PeerIdentity?
    ) {
        self.protocolVersion = protocolVersion
        self.cipherSuite = cipherSuite
        self.applicationProtocol = applicationProtocol
        self.peerIdentity = peerIdentity
    }
}
