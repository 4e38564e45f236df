import Foundation

/// The client address a limit counts against, from a connection's `PeerInfo.address`.
///
/// The port is dropped (every connection of a client shares the key) and IPv6 addresses count by their
/// /64 prefix, because one subscriber usually gets a whole /64 and could otherwise pick a fresh address
/// for every call.
public enum ClientAddress {
    /// `[IPv4]127.0.0.1/127.0.0.1:53412` → `127.0.0.1`; `[IPv6]::1/::1:53412` → `0:0:0:0::/64`.
    /// Text in no known shape is kept whole (still a key, never a crash).
    public static func key(of peerAddress: String) -> String {
        var text = Substring(peerAddress)
        let isIPv6 = text.hasPrefix("[IPv6]")
        guard isIPv6 || text.hasPrefix("[IPv4]") else { return peerAddress }
        text = text.dropFirst(6)
        if let slash = text.lastIndex(of: "/") { text = text[text.index(after: slash)...] }
        if let colon = text.lastIndex(of: ":") { text = text[..<colon] }
        guard !text.isEmpty else { return peerAddress }
        guard isIPv6 else { return String(text) }
        return ipv6Prefix(String(text)) ?? String(text)
    }

    /// The first four groups of an IPv6 address (`::` expanded), as `a:b:c:d::/64`.
    static func ipv6Prefix(_ address: String) -> String? {
        // An IPv4 client on a dual-stack socket (`::ffff:1.2.3.4`) is that IPv4 address.
        if address.lowercased().hasPrefix("::ffff:"), address.contains(".") { return String(address.dropFirst(7)) }
        let halves = address.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [String]? {
            part.isEmpty ? [] : part.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        }
        guard let head = groups(halves[0]) else { return nil }
        var all = head
        if halves.count == 2 {
            guard let tail = groups(halves[1]), head.count + tail.count < 8 else { return nil }
            all += Array(repeating: "0", count: 8 - head.count - tail.count) + tail
        }
        guard all.count >= 4 else { return nil }
        var prefix: [String] = []
        for group in all.prefix(4) {
            guard (1...4).contains(group.count), let value = UInt16(group, radix: 16) else { return nil }
            prefix.append(String(value, radix: 16))
        }
        return prefix.joined(separator: ":") + "::/64"
    }
}
