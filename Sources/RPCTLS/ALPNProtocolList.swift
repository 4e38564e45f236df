/// ALPN protocol names in OpenSSL's wire format (each name prefixed by its length byte), kept in memory
/// that never moves: the server's ALPN callback hands OpenSSL a pointer into it.
final class ALPNProtocolList {
    let bytes: UnsafeMutableBufferPointer<UInt8>

    init(_ protocols: [String]) throws(TLSError) {
        var wire: [UInt8] = []
        for name in protocols {
            let utf8 = Array(name.utf8)
            guard (1...255).contains(utf8.count) else {
                throw TLSError(kind: .configuration, reason: "ALPN protocol name must be 1...255 bytes: '\(name)'")
            }
            wire.append(UInt8(utf8.count))
            wire.append(contentsOf: utf8)
        }
        self.bytes = .allocate(capacity: wire.count)
        _ = self.bytes.initialize(from: wire)
    }

    deinit {
        self.bytes.deallocate()
    }
}
