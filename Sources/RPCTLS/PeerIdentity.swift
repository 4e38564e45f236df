/// Who the peer proved to be: names from its certificate, present only after the chain verified.
///
/// The RPC layer puts this in each call's context, so a handler can tell a service (a `spiffe://yedi/service/…`
/// URI) from an end-user client.
public struct PeerIdentity: Sendable, Hashable, CustomStringConvertible {
    /// The subject's common name, if it has one.
    public var commonName: String?
    /// `subjectAltName` DNS entries, in certificate order.
    public var dnsNames: [String]
    /// `subjectAltName` URI entries (e.g. SPIFFE IDs), in certificate order.
    public var uris: [String]

    public init(commonName: String?, dnsNames: [String] = [], uris: [String] = []) {
        self.commonName = commonName
        self.dnsNames = dnsNames
        self.uris = uris
    }

    public var description: String {
        "PeerIdentity(CN=\(self.commonName ?? "-"), DNS=\(self.dnsNames), URI=\(self.uris))"
    }
}
