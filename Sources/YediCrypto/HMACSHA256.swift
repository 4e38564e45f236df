/// HMAC-SHA256 (RFC 2104) over `SHA256`: keyed hashes, such as the user tags in logs, that nobody
/// without the key can compute, so a tag cannot be matched to an id by hashing candidate ids.
public enum HMACSHA256 {
    private static let blockBytes = 64

    public static func mac(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        var block = key.count > blockBytes ? SHA256.hash(key) : key
        block += [UInt8](repeating: 0, count: blockBytes - block.count)
        let inner = SHA256.hash(block.map { $0 ^ 0x36 } + data)
        return SHA256.hash(block.map { $0 ^ 0x5C } + inner)
    }
}
