/// User inbound events the ``TLSHandler`` fires (failures travel as ``TLSError`` through `errorCaught`).
public enum TLSEvent: Sendable, Hashable {
    /// The handshake finished and the peer is verified; fired once, before any plaintext is delivered.
    case handshakeCompleted(TLSHandshakeInfo)
}
