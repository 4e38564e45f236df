/// Where a keyset-paginated list stopped: the sort key and the tie-breaking id of the last item a page
/// showed. The next page starts strictly after it, so rows added meanwhile never show twice or push
/// an item out of sight.
public struct PagePosition<Key: PageKey>: Sendable, Hashable {
    public var key: Key
    /// "" for a list whose keys are unique by themselves.
    public var id: String

    public init(key: Key, id: String = "") {
        self.key = key
        self.id = id
    }
}

/// A sort key a page cursor can carry: text, or a number (an instant, a position in a stream).
public protocol PageKey: Sendable, Hashable {
    var cursorText: String { get }
    init?(cursorText: String)
}

extension String: PageKey {
    public var cursorText: String { self }
    public init?(cursorText: String) { self = cursorText }
}

extension Int64: PageKey {
    public var cursorText: String { String(self) }
    public init?(cursorText: String) { self.init(cursorText, radix: 10) }
}
