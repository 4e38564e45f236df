/// Key–value pairs sent with a request (`authorization`, `traceparent`, `request-id`, …) and with the
/// end of a call. Keys are lowercase ASCII; a key may repeat; order is kept.
public struct Metadata: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    public struct Entry: Sendable, Hashable {
        public let key: String
        public var value: String
    }

    private(set) var entries: [Entry] = []

    public init() {}

    public init(dictionaryLiteral elements: (String, String)...) {
        for (key, value) in elements { add(key, value) }
    }

    /// The first value for `key`; setting replaces every value for it (nil removes them).
    public subscript(key: String) -> String? {
        get {
            let key = Self.lowercase(key)
            return entries.first { $0.key == key }?.value
        }
        set {
            remove(key)
            if let newValue { add(key, newValue) }
        }
    }

    public func values(for key: String) -> [String] {
        let key = Self.lowercase(key)
        return entries.filter { $0.key == key }.map(\.value)
    }

    public mutating func add(_ key: String, _ value: String) {
        entries.append(Entry(key: Self.lowercase(key), value: value))
    }

    public mutating func remove(_ key: String) {
        let key = Self.lowercase(key)
        entries.removeAll { $0.key == key }
    }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }

    /// Bytes of keys and values (the server's metadata limit also counts each entry's overhead:
    /// `WireLimits.metadataEntryOverhead`).
    public var byteCount: Int { entries.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count } }

    public func makeIterator() -> IndexingIterator<[Entry]> { entries.makeIterator() }

    /// Values of keys that carry secrets are hidden, so metadata can be logged.
    public var description: String {
        let shown = entries.map { entry in
            Metadata.secretKeys.contains(entry.key) ? "\(entry.key): <redacted>" : "\(entry.key): \(entry.value)"
        }
        return "[\(shown.joined(separator: ", "))]"
    }

    static let secretKeys: Set<String> = ["authorization", "yedi-on-behalf-of", "cookie", "x-api-key"]

    /// `key` lowercased; the same string when it is already (every key the code names is), because
    /// `lowercased()` makes a new string each time and a lookup happens several times per call. The
    /// check reads the key's bytes in place: the `UTF8View`'s iterator costs a call per byte.
    private static func lowercase(_ key: String) -> String {
        let needsLowercasing =
            key.utf8.withContiguousStorageIfAvailable { $0.contains(where: isUppercaseOrNonASCII) }
            ?? key.utf8.contains(where: isUppercaseOrNonASCII)
        return needsLowercasing ? key.lowercased() : key
    }

    private static func isUppercaseOrNonASCII(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || byte >= 0x80
    }
}

extension Metadata {
    /// Appends an entry whose key is lowercase already (the frame reader's), without lowercasing again.
    mutating func appendLowercased(_ entry: Entry) {
        entries.append(entry)
    }

    var wire: [YediRPC.MetadataEntry] {
        entries.map { YediRPC.MetadataEntry(key: $0.key, value: $0.value) }
    }
}
