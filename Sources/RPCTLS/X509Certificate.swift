internal import COpenSSL

/// An owned `X509 *`, with just enough inspection to build a ``PeerIdentity``.
final class X509Certificate {
    private let pointer: OpaquePointer

    /// Takes over one reference (as returned by `SSL_get1_peer_certificate`).
    init(takingOwnershipOf pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        X509_free(self.pointer)
    }

    var identity: PeerIdentity {
        var identity = PeerIdentity(commonName: self.commonName)
        self.forEachSubjectAlternativeName { type, value in
            switch type {
            case GEN_DNS: identity.dnsNames.append(value)
            case GEN_URI: identity.uris.append(value)
            default: break
            }
        }
        return identity
    }

    /// The (last) CN of the subject, decoded to UTF-8 whatever ASN.1 string type it was stored as.
    private var commonName: String? {
        guard let subject = X509_get_subject_name(self.pointer) else { return nil }
        let index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(subject, index),
            let data = X509_NAME_ENTRY_get_data(entry)
        else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>? = nil
        let length = ASN1_STRING_to_UTF8(&utf8, data)
        guard length >= 0, let utf8 else { return nil }
        defer { yedi_OPENSSL_free(utf8) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }

    /// Calls `body` with each IA5String-valued SAN entry (DNS, URI, e-mail) and its `GEN_*` type.
    private func forEachSubjectAlternativeName(_ body: (CInt, String) -> Void) {
        guard let raw = X509_get_ext_d2i(self.pointer, NID_subject_alt_name, nil, nil) else { return }
        let names = GeneralNames(takingOwnershipOf: OpaquePointer(raw))
        // The entries point into `names`: keep it alive until the last one is read.
        withExtendedLifetime(names) {
            for index in 0..<yedi_sk_GENERAL_NAME_num(names.pointer) {
                var type: CInt = 0
                guard let name = yedi_sk_GENERAL_NAME_value(names.pointer, index),
                    let value = GENERAL_NAME_get0_value(name, &type)
                else { continue }
                guard type == GEN_DNS || type == GEN_URI || type == GEN_EMAIL else { continue }
                let string = value.assumingMemoryBound(to: ASN1_STRING.self)  // an ASN1_IA5STRING *
                guard let bytes = ASN1_STRING_get0_data(string) else { continue }
                let length = Int(ASN1_STRING_length(string))
                body(type, String(decoding: UnsafeBufferPointer(start: bytes, count: length), as: UTF8.self))
            }
        }
    }
}

/// An owned `GENERAL_NAMES *` (the decoded subjectAltName extension).
private final class GeneralNames {
    let pointer: OpaquePointer

    init(takingOwnershipOf pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        GENERAL_NAMES_free(self.pointer)
    }
}
