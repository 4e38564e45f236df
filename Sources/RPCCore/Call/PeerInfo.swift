/// Who is on the other end of a call's connection.
public struct PeerInfo: Sendable, Hashable, CustomStringConvertible {
    /// `ipv4:127.0.0.1:53412`, for logs.
    public var address: String
    /// The verified client certificate's identity (mutual TLS), if the client sent one.
    public var identity: PeerIdentity?

    public init(address: String, identity: PeerIdentity? = nil) {
        self.address = address
        self.identity = identity
    }

    /// The Yedi service named in the certificate's URI SAN (`spiffe://yedi/service/<name>`), if any:
    /// only service certificates from the dev PKI's CA carry one.
    public var serviceName: String? {
        identity?.uris.lazy.compactMap { uri in
            uri.hasPrefix(PeerInfo.serviceURIPrefix) ? String(uri.dropFirst(PeerInfo.serviceURIPrefix.count)) : nil
        }.first
    }

    static let serviceURIPrefix = "spiffe://yedi/service/"

    public var description: String {
        identity.map { "\(address) (\($0))" } ?? address
    }
}
