internal import COpenSSL
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One connection's `SSL *` and its ``ByteBufferBIO``: the only place that calls `SSL_do_handshake`,
/// `SSL_read`, `SSL_write` and `SSL_shutdown`, and turns their return codes into Swift outcomes.
///
/// Every call clears the (per-thread) OpenSSL error queue first and drains it into a ``TLSError``
/// right after a failure. Must be used from one thread at a time (the channel's event loop).
final class SSLConnection {
    /// The result of a handshake or shutdown step.
    enum Step {
        case complete
        /// OpenSSL needs more ciphertext from the peer (`SSL_ERROR_WANT_READ`/`WANT_WRITE`).
        case wantMore
        case failed(TLSError)
    }

    /// The result of draining decrypted records.
    enum ReadResult {
        /// Some plaintext was appended; call again.
        case readSome
        /// No complete record left; wait for more ciphertext.
        case wantMore
        /// The peer sent `close_notify`.
        case closeNotify
        case failed(TLSError)
    }

    let bio: ByteBufferBIO
    private let ssl: OpaquePointer
    /// Holds the SSL_CTX and the ALPN bytes its callback points into.
    private let context: TLSContext

    init(context: TLSContext, serverName: String?) throws(TLSError) {
        OpenSSLErrorQueue.clear()
        guard let ssl = SSL_new(context.pointer) else {
            throw Self.setupFailure("SSL_new failed")
        }
        self.ssl = ssl
        self.context = context
        self.bio = ByteBufferBIO(allocator: ByteBufferAllocator())
        // SSL_set_bio takes over one reference (one in total, as rbio == wbio); the ByteBufferBIO keeps its own.
        BIO_up_ref(self.bio.pointer)
        SSL_set_bio(ssl, self.bio.pointer, self.bio.pointer)

        switch context.role {
        case .server:
            SSL_set_accept_state(ssl)
        case .client:
            guard let serverName else {
                throw TLSError(kind: .configuration, reason: "a TLS client needs the server's name or IP address")
            }
            try self.expectServer(named: serverName)
            SSL_set_connect_state(ssl)
        }
    }

    deinit {
        SSL_free(self.ssl)  // before `bio` goes: OpenSSL must not call into a freed ByteBufferBIO
    }

    /// Names are checked against SAN DNS entries and sent as SNI; IP literals are checked against SAN IP
    /// entries and never sent as SNI (RFC 6066 forbids it).
    private func expectServer(named serverName: String) throws(TLSError) {
        OpenSSLErrorQueue.clear()
        if let ip = Self.ipLiteral(serverName) {
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(self.ssl), ip) == 1 else {
                throw Self.setupFailure("invalid server IP address '\(serverName)'")
            }
        } else {
            SSL_set_hostflags(self.ssl, CUnsignedInt(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            guard SSL_set1_host(self.ssl, serverName) == 1,
                yedi_SSL_set_tlsext_host_name(self.ssl, serverName) == 1
            else {
                throw Self.setupFailure("invalid server name '\(serverName)'")
            }
        }
    }

    /// `serverName` without brackets if it is an IPv4 or IPv6 literal, else `nil`.
    private static func ipLiteral(_ serverName: String) -> String? {
        var candidate = Substring(serverName)
        if candidate.hasPrefix("[") && candidate.hasSuffix("]") {
            candidate = candidate.dropFirst().dropLast()
        }
        let text = String(candidate)
        var address = in6_addr()
        if inet_pton(AF_INET, text, &address) == 1 || inet_pton(AF_INET6, text, &address) == 1 {
            return text
        }
        return nil
    }

    // MARK: Operations

    func handshake() -> Step {
        OpenSSLErrorQueue.clear()
        let rc = SSL_do_handshake(self.ssl)
        if rc == 1 { return .complete }
        switch SSL_get_error(self.ssl, rc) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .wantMore
        case let code:
            return .failed(self.failure(code, during: .handshake))
        }
    }

    /// Decrypts at most one record's worth into `plaintext`.
    func read(into plaintext: inout ByteBuffer) -> ReadResult {
        OpenSSLErrorQueue.clear()
        var rc: CInt = 0
        plaintext.writeWithUnsafeMutableBytes(minimumWritableBytes: TLSCipherPolicy.maximumRecordPlaintext) { space in
            rc = SSL_read(self.ssl, space.baseAddress, CInt(clamping: space.count))
            return rc > 0 ? Int(rc) : 0
        }
        if rc > 0 { return .readSome }
        switch SSL_get_error(self.ssl, rc) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .wantMore
        case SSL_ERROR_ZERO_RETURN:
            return .closeNotify
        case let code:
            return .failed(self.failure(code, during: .read))
        }
    }

    /// Encrypts all of `plaintext` (advancing its reader index), unless OpenSSL must first read.
    func write(_ plaintext: inout ByteBuffer) -> Step {
        while plaintext.readableBytes > 0 {
            OpenSSLErrorQueue.clear()
            let rc = plaintext.withUnsafeReadableBytes { bytes in
                SSL_write(self.ssl, bytes.baseAddress, CInt(clamping: bytes.count))
            }
            if rc > 0 {
                plaintext.moveReaderIndex(forwardBy: Int(rc))  // partial writes simply loop
                continue
            }
            switch SSL_get_error(self.ssl, rc) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return .wantMore
            case let code:
                return .failed(self.failure(code, during: .write))
            }
        }
        return .complete
    }

    /// Sends our `close_notify` (first call) or checks for the peer's: `.complete` once both are done.
    func shutdown() -> Step {
        OpenSSLErrorQueue.clear()
        let rc = SSL_shutdown(self.ssl)
        switch rc {
        case 1:
            return .complete
        case 0:
            return .wantMore
        default:
            switch SSL_get_error(self.ssl, rc) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return .wantMore
            case let code:
                return .failed(self.failure(code, during: .shutdown))
            }
        }
    }

    // MARK: Results of the handshake

    /// Only meaningful after the handshake completed.
    var handshakeInfo: TLSHandshakeInfo {
        TLSHandshakeInfo(
            protocolVersion: TLSProtocolVersion(openSSLValue: SSL_version(self.ssl)) ?? .tls12,
            cipherSuite: self.cipherSuite,
            applicationProtocol: self.applicationProtocol,
            peerIdentity: self.verifiedPeerIdentity
        )
    }

    private var cipherSuite: String {
        guard let cipher = SSL_get_current_cipher(self.ssl), let name = SSL_CIPHER_standard_name(cipher) else {
            return "unknown"
        }
        return String(cString: name)
    }

    private var applicationProtocol: String? {
        var bytes: UnsafePointer<UInt8>? = nil
        var length: CUnsignedInt = 0
        SSL_get0_alpn_selected(self.ssl, &bytes, &length)
        guard let bytes, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(length)), as: UTF8.self)
    }

    /// The peer certificate's identity, only if it was presented *and* verified.
    private var verifiedPeerIdentity: PeerIdentity? {
        guard let certificate = SSL_get1_peer_certificate(self.ssl) else { return nil }
        let owned = X509Certificate(takingOwnershipOf: certificate)
        guard SSL_get_verify_result(self.ssl) == X509_V_OK else { return nil }
        return owned.identity
    }

    // MARK: Errors

    private enum Operation {
        case handshake, read, write, shutdown
    }

    /// Builds the error for a failed call: must run right after it, before anything else touches the queue.
    private func failure(_ code: CInt, during operation: Operation) -> TLSError {
        let entries = OpenSSLErrorQueue.drain()
        var kind: TLSError.Kind = operation == .handshake ? .handshakeFailed : .protocolFailure
        var reason: String
        if entries.isEmpty {
            reason =
                code == SSL_ERROR_SYSCALL
                ? "unexpected I/O failure in OpenSSL" : "OpenSSL error (SSL_get_error \(code))"
        } else {
            reason = entries.map(\.reason).joined(separator: "; ")
        }
        let verifyResult = SSL_get_verify_result(self.ssl)
        if operation == .handshake, verifyResult != X509_V_OK {
            kind = .certificateVerificationFailed
            reason += ": " + String(cString: X509_verify_cert_error_string(verifyResult))
        }
        return TLSError(kind: kind, reason: reason, openSSLErrors: entries.map(\.line))
    }

    private static func setupFailure(_ what: String) -> TLSError {
        let entries = OpenSSLErrorQueue.drain()
        let detail = entries.isEmpty ? "" : ": " + entries.map(\.reason).joined(separator: "; ")
        return TLSError(kind: .configuration, reason: what + detail, openSSLErrors: entries.map(\.line))
    }
}
