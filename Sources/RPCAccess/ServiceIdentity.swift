import RPCCore
import RPCTLS

/// Yedi services name themselves in their certificates' URI SAN: `spiffe://yedi/service/<name>`.
extension PeerInfo {
    static let serviceURIPrefix = "spiffe://yedi/service/"

    /// The Yedi service named in the certificate's URI SAN (`spiffe://yedi/service/<name>`), if any:
    /// only service certificates from the dev PKI's CA carry one.
    public var serviceName: String? {
        identity?.uris.lazy.compactMap { uri in
            uri.hasPrefix(PeerInfo.serviceURIPrefix) ? String(uri.dropFirst(PeerInfo.serviceURIPrefix.count)) : nil
        }.first
    }

    /// The URI SAN of service `name`'s certificate: `spiffe://yedi/service/<name>`.
    public static func serviceIdentity(of name: String) -> String { serviceURIPrefix + name }
}
