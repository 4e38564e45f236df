internal import COpenSSL

/// The TLS versions this layer speaks. 1.0 and 1.1 are deliberately not representable: they are refused.
public enum TLSProtocolVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    case tls12
    case tls13

    var openSSLValue: CInt {
        switch self {
        case .tls12: return TLS1_2_VERSION
        case .tls13: return TLS1_3_VERSION
        }
    }

    init?(openSSLValue: CInt) {
        switch openSSLValue {
        case TLS1_2_VERSION: self = .tls12
        case TLS1_3_VERSION: self = .tls13
        default: return nil
        }
    }

    /// OpenSSL's spelling ("TLSv1.3"), which is also what `openssl s_client` prints.
    public var description: String {
        switch self {
        case .tls12: return "TLSv1.2"
        case .tls13: return "TLSv1.3"
        }
    }
}
