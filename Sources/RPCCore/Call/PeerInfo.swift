import RPCTLS

/// Who is on the other end of a call's connection.
///
/// A class: made once per connection and shared by the context of each of its calls.
public final class PeerInfo: Sendable, Hashable, CustomStringConvertible {
    /// `[IPv4]127.0.0.1/127.0.0.1:53412`, for logs.
    public let address: String
    /// The verified client certificate's identity (mutual TLS), if the client sent one.
    public let identity: PeerIdentity?
    /// The Yedi service named in the certificate's URI SAN (`spiffe://yedi/service/<name>`), if any:
    /// only service certificates from the dev PKI's CA carry one.
    public let serviceName: String?
    /// The connection's failed authentications (`AuthenticationInterceptor`'s budget).
    public let authenticationFailures = AuthenticationFailures()

    public init(address: String, identity: PeerIdentity? = nil) {
        self.address = address
        self.identity = identity
        self.serviceName =
            identity?.uris.lazy.compactMap { uri in
                uri.hasPrefix(PeerInfo.serviceURIPrefix) ? String(uri.dropFirst(PeerInfo.serviceURIPrefix.count)) : nil
            }.first
    }

    static let serviceURIPrefix = "spiffe://yedi/service/"

    /// The URI SAN of service `name`'s certificate: `spiffe://yedi/service/<name>`.
    public static func serviceIdentity(of name: String) -> String { serviceURIPrefix + name }

    public var description: String {
        identity.map { "\(address) (\($0))" } ?? address
    }

    public static func == (lhs: PeerInfo, rhs: PeerInfo) -> Bool {
        lhs.address == rhs.address && lhs.identity == rhs.identity
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(address)
        hasher.combine(identity)
    }
}
