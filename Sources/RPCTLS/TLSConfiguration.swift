import NIOCore

/// Everything needed to build a ``TLSContext``: plain values, so it can be loaded from config and shared.
///
/// The cipher policy is not configurable on purpose (see ``TLSCipherPolicy``); what varies between
/// deployments is files, the role, client-certificate policy and timeouts.
public struct TLSConfiguration: Sendable, Hashable {
    /// Which end of the handshake contexts built from this configuration play.
    public enum Role: Sendable, Hashable {
        case client
        case server
    }

    /// Whether a server asks for, and insists on, a client certificate (always verified against
    /// ``TLSConfiguration/trustRootsFile`` when one is sent).
    public enum ClientCertificateVerification: Sendable, Hashable {
        /// Don't ask; clients are anonymous at the TLS layer.
        case none
        /// Ask; a client without a certificate is accepted, one with a bad certificate is not.
        case optional
        /// Ask and refuse clients that send none (mutual TLS).
        case required
    }

    /// The ALPN protocol of Yedi RPC connections.
    public static let yediApplicationProtocol = "yedi-rpc/1"

    public var role: Role
    /// PEM: our certificate first, then any intermediates. Required for servers; for clients only
    /// when presenting a client certificate.
    public var certificateChainFile: String?
    /// PEM private key matching the first certificate of ``certificateChainFile``.
    public var privateKeyFile: String?
    /// PEM CA certificates trusted to sign the *peer's* certificate. `nil` on a client means the
    /// system trust store; a server that asks for client certificates must name a file.
    public var trustRootsFile: String?
    /// Servers only; ignored by clients.
    public var clientCertificateVerification: ClientCertificateVerification
    /// The oldest version accepted. TLS 1.3 is always preferred when both ends speak it.
    public var minimumProtocolVersion: TLSProtocolVersion
    /// ALPN protocols, most preferred first. A server refuses peers that offer only others (with the
    /// `no_application_protocol` alert) but accepts peers that offer none. Empty disables ALPN.
    public var applicationProtocols: [String]
    /// A connection whose handshake has not finished after this long is closed with
    /// ``TLSError/Kind-swift.enum/handshakeTimeout``.
    public var handshakeTimeout: TimeAmount
    /// After sending our `close_notify`, how long to wait for the peer's before closing anyway.
    public var closeNotifyTimeout: TimeAmount

    public init(
        role: Role,
        certificateChainFile: String? = nil,
        privateKeyFile: String? = nil,
        trustRootsFile: String? = nil,
        clientCertificateVerification: ClientCertificateVerification = .none,
        minimumProtocolVersion: TLSProtocolVersion = .tls12,
        applicationProtocols: [String] = [TLSConfiguration.yediApplicationProtocol],
        handshakeTimeout: TimeAmount = .seconds(10),
        closeNotifyTimeout: TimeAmount = .seconds(3)
    ) {
        self.role = role
        self.certificateChainFile = certificateChainFile
        self.privateKeyFile = privateKeyFile
        self.trustRootsFile = trustRootsFile
        self.clientCertificateVerification = clientCertificateVerification
        self.minimumProtocolVersion = minimumProtocolVersion
        self.applicationProtocols = applicationProtocols
        self.handshakeTimeout = handshakeTimeout
        self.closeNotifyTimeout = closeNotifyTimeout
    }

    /// A server presenting `certificateChainFile`, optionally verifying clients against `trustRootsFile`.
    public static func server(
        certificateChainFile: String,
        privateKeyFile: String,
        trustRootsFile: String? = nil,
        clientCertificateVerification: ClientCertificateVerification = .none
    ) -> TLSConfiguration {
        TLSConfiguration(
            role: .server,
            certificateChainFile: certificateChainFile,
            privateKeyFile: privateKeyFile,
            trustRootsFile: trustRootsFile,
            clientCertificateVerification: clientCertificateVerification
        )
    }

    /// A client trusting `trustRootsFile`, presenting a certificate of its own when both files are given.
    public static func client(
        trustRootsFile: String?,
        certificateChainFile: String? = nil,
        privateKeyFile: String? = nil
    ) -> TLSConfiguration {
        TLSConfiguration(
            role: .client,
            certificateChainFile: certificateChainFile,
            privateKeyFile: privateKeyFile,
            trustRootsFile: trustRootsFile
        )
    }
}
