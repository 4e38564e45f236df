internal import COpenSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An OpenSSL `SSL_CTX` configured from a ``TLSConfiguration``: built once, shared by every connection.
///
/// Building it does all the expensive and failure-prone work (reading PEM files, checking the key
/// matches) up front, so a bad deployment fails at start-up with an error naming the file rather
/// than on the first connection.
public final class TLSContext: @unchecked Sendable {
    // @unchecked: an SSL_CTX may be shared across threads once configured, and after init we
    // only ever pass it to SSL_new (which takes its own reference). Nothing here mutates it.

    public let configuration: TLSConfiguration
    /// The `SSL_CTX *`, owned.
    let pointer: OpaquePointer
    /// Kept alive for the ALPN select callback, which points into it.
    private let serverALPN: ALPNProtocolList?

    public init(configuration: TLSConfiguration) throws(TLSError) {
        let method = configuration.role == .client ? TLS_client_method() : TLS_server_method()
        OpenSSLErrorQueue.clear()
        guard let context = SSL_CTX_new(method) else {
            throw Self.openSSLFailure("cannot create an SSL_CTX")
        }
        do {
            try Self.applyProtocolPolicy(context, configuration)
            try Self.loadTrustRoots(context, configuration)
            try Self.loadIdentity(context, configuration)
            Self.applyPeerVerification(context, configuration)
            self.serverALPN = try Self.applyALPN(context, configuration)
        } catch {
            SSL_CTX_free(context)
            throw error
        }
        self.configuration = configuration
        self.pointer = context
        if let serverALPN {
            SSL_CTX_set_alpn_select_cb(context, alpnSelect, Unmanaged.passUnretained(serverALPN).toOpaque())
        }
    }

    deinit {
        SSL_CTX_free(self.pointer)
    }

    var role: TLSConfiguration.Role { self.configuration.role }

    // MARK: Setup steps

    /// Versions, ciphers, and the options that keep the attack surface and the hot path small.
    private static func applyProtocolPolicy(_ context: OpaquePointer, _ configuration: TLSConfiguration)
        throws(TLSError)
    {
        guard yedi_SSL_CTX_set_min_proto_version(context, configuration.minimumProtocolVersion.openSSLValue) == 1,
            yedi_SSL_CTX_set_max_proto_version(context, TLS1_3_VERSION) == 1
        else {
            throw openSSLFailure("cannot set the protocol versions")
        }
        guard SSL_CTX_set_cipher_list(context, TLSCipherPolicy.tls12CipherList) == 1,
            SSL_CTX_set_ciphersuites(context, TLSCipherPolicy.tls13CipherSuites) == 1,
            yedi_SSL_CTX_set1_groups_list(context, TLSCipherPolicy.groups) == 1
        else {
            throw openSSLFailure("cannot set the cipher policy")
        }

        var options = yedi_SSL_OP_NO_COMPRESSION() | yedi_SSL_OP_NO_RENEGOTIATION()
        if configuration.role == .server {
            // No resumption: RPC connections are long-lived, and tickets/caches would be state to leak.
            options |= yedi_SSL_OP_NO_TICKET() | yedi_SSL_OP_CIPHER_SERVER_PREFERENCE()
            SSL_CTX_set_num_tickets(context, 0)
        }
        SSL_CTX_set_options(context, options)
        _ = yedi_SSL_CTX_set_session_cache_mode(context, CLong(SSL_SESS_CACHE_OFF))

        // Our BIO never blocks, but a write may still be retried after WANT_READ with the rest of a
        // buffer that has moved: allow both. NO_AUTO_CHAIN: send exactly the chain file, never a chain
        // OpenSSL completes from the trust store (the root is useless to the peer and costs bytes).
        // Read-ahead lets OpenSSL pull a whole read's worth of ciphertext per BIO call instead of
        // header-then-body per record.
        _ = yedi_SSL_CTX_set_mode(
            context,
            CLong(SSL_MODE_ENABLE_PARTIAL_WRITE) | CLong(SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER)
                | CLong(SSL_MODE_NO_AUTO_CHAIN)
        )
        yedi_SSL_CTX_set_read_ahead(context, 1)
    }

    private static func loadTrustRoots(_ context: OpaquePointer, _ configuration: TLSConfiguration) throws(TLSError) {
        guard let file = configuration.trustRootsFile else {
            if configuration.role == .server && configuration.clientCertificateVerification != .none {
                throw TLSError(
                    kind: .configuration,
                    reason: "a server that verifies client certificates needs trustRootsFile (the client CA)"
                )
            }
            if configuration.role == .client {
                OpenSSLErrorQueue.clear()
                guard SSL_CTX_set_default_verify_paths(context) == 1 else {
                    throw openSSLFailure("cannot load the system trust store")
                }
            }
            return
        }
        try requireReadable(file, "trust roots (CA) file")
        OpenSSLErrorQueue.clear()
        guard SSL_CTX_load_verify_locations(context, file, nil) == 1 else {
            throw openSSLFailure("cannot load trust roots (CA) file", file: file)
        }
        if configuration.role == .server {
            // Tell clients which CA we accept, so tools like `openssl s_client` pick the right certificate.
            OpenSSLErrorQueue.clear()
            guard let names = SSL_load_client_CA_file(file) else {
                throw openSSLFailure("cannot read CA names from trust roots file", file: file)
            }
            SSL_CTX_set_client_CA_list(context, names)
        }
    }

    private static func loadIdentity(_ context: OpaquePointer, _ configuration: TLSConfiguration) throws(TLSError) {
        switch (configuration.certificateChainFile, configuration.privateKeyFile) {
        case (nil, nil):
            if configuration.role == .server {
                throw TLSError(kind: .configuration, reason: "a server needs certificateChainFile and privateKeyFile")
            }
        case (let chain?, let key?):
            try requireReadable(chain, "certificate chain file")
            try requireReadable(key, "private key file")
            OpenSSLErrorQueue.clear()
            guard SSL_CTX_use_certificate_chain_file(context, chain) == 1 else {
                throw openSSLFailure("cannot load certificate chain", file: chain)
            }
            OpenSSLErrorQueue.clear()
            guard SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) == 1 else {
                throw openSSLFailure("cannot load private key (or it does not match the certificate)", file: key)
            }
            OpenSSLErrorQueue.clear()
            guard SSL_CTX_check_private_key(context) == 1 else {
                throw openSSLFailure("private key does not match the certificate in \(chain)", file: key)
            }
        case (_?, nil), (nil, _?):
            throw TLSError(
                kind: .configuration,
                reason: "certificateChainFile and privateKeyFile must be given together"
            )
        }
    }

    private static func applyPeerVerification(_ context: OpaquePointer, _ configuration: TLSConfiguration) {
        let mode: CInt
        switch (configuration.role, configuration.clientCertificateVerification) {
        case (.client, _):
            mode = SSL_VERIFY_PEER
        case (.server, .none):
            mode = SSL_VERIFY_NONE
        case (.server, .optional):
            mode = SSL_VERIFY_PEER
        case (.server, .required):
            mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
        }
        SSL_CTX_set_verify(context, mode, nil)
    }

    /// Clients advertise the list; servers keep it for the select callback (returned to the caller).
    private static func applyALPN(
        _ context: OpaquePointer,
        _ configuration: TLSConfiguration
    ) throws(TLSError) -> ALPNProtocolList? {
        guard !configuration.applicationProtocols.isEmpty else { return nil }
        let list = try ALPNProtocolList(configuration.applicationProtocols)
        switch configuration.role {
        case .server:
            return list
        case .client:
            OpenSSLErrorQueue.clear()
            // Note the inverted convention: SSL_CTX_set_alpn_protos returns 0 on success.
            guard SSL_CTX_set_alpn_protos(context, list.bytes.baseAddress, CUnsignedInt(list.bytes.count)) == 0 else {
                throw openSSLFailure("cannot set ALPN protocols")
            }
            return nil
        }
    }

    // MARK: Errors

    private static func requireReadable(_ file: String, _ what: String) throws(TLSError) {
        guard access(file, R_OK) == 0 else {
            let cause = String(cString: strerror(errno))
            throw TLSError(kind: .configuration, reason: "cannot read \(what) '\(file)': \(cause)", file: file)
        }
    }

    private static func openSSLFailure(_ what: String, file: String? = nil) -> TLSError {
        let entries = OpenSSLErrorQueue.drain()
        var reason = what
        if let file {
            reason += " '\(file)'"
        }
        if !entries.isEmpty {
            reason += ": " + entries.map(\.reason).joined(separator: "; ")
        }
        return TLSError(kind: .configuration, reason: reason, openSSLErrors: entries.map(\.line), file: file)
    }
}

/// The server's ALPN choice: the first of our protocols the client also offers. A client that offers
/// only other protocols gets the fatal `no_application_protocol` alert (OpenSSL sends it when we return
/// ALERT_FATAL). A client that offers none never reaches this callback, and is accepted.
private func alpnSelect(
    _ ssl: OpaquePointer?,
    _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
    _ outLength: UnsafeMutablePointer<UInt8>?,
    _ offered: UnsafePointer<UInt8>?,
    _ offeredLength: CUnsignedInt,
    _ argument: UnsafeMutableRawPointer?
) -> CInt {
    guard let out, let outLength, let offered, let argument else {
        return SSL_TLSEXT_ERR_ALERT_FATAL
    }
    let ours = Unmanaged<ALPNProtocolList>.fromOpaque(argument).takeUnretainedValue()
    var selected: UnsafeMutablePointer<UInt8>? = nil
    var selectedLength: UInt8 = 0
    let outcome = SSL_select_next_proto(
        &selected,
        &selectedLength,
        ours.bytes.baseAddress,
        CUnsignedInt(ours.bytes.count),
        offered,
        offeredLength
    )
    guard outcome == OPENSSL_NPN_NEGOTIATED, let selected else {
        return SSL_TLSEXT_ERR_ALERT_FATAL
    }
    out.pointee = UnsafePointer(selected)
    outLength.pointee = selectedLength
    return SSL_TLSEXT_ERR_OK
}
