import RPCCore
import YediCrypto
import YediProto

/// One paginated list of a service (`content.posts`, `booking.reservations`, …): its page-size rule and
/// its cursors.
///
/// A cursor is opaque to clients and tamper-evident: version 1 is base64url of
/// `0x01 · key length (2 bytes, big-endian) · key · id · MAC`, where MAC is the first 16 bytes of
/// HMAC-SHA-256 over the list's name and the rest, under the service's cursor key (`PageCursorKey`). A cursor from another list, another
/// deployment, an older format or edited by hand is refused with `INVALID_ARGUMENT` before any work, so
/// the store only ever sees positions it produced.
public struct PageList: Sendable {
    public let name: String
    public let defaultLimit: Int
    public let maximumLimit: Int
    private let key: PageCursorKey

    /// The longest cursor read (a name-keyed list: up to 200 bytes of key and 128 of id, base64url).
    static let maximumCursorBytes = 1_024
    static let version: UInt8 = 1
    static let macBytes = 16

    public init(_ name: String, defaultLimit: Int = 20, maximumLimit: Int = 50, key: PageCursorKey) {
        precondition(0 < defaultLimit && defaultLimit <= maximumLimit, "PageList \(name): bad page sizes")
        self.name = name
        self.defaultLimit = defaultLimit
        self.maximumLimit = maximumLimit
        self.key = key
    }

    /// The page a request asks for: after which position (nil: the first page) and how many items.
    /// The limit rule is the same for every list: 0 means `defaultLimit`, more than `maximumLimit` gets
    /// `maximumLimit`, negative is refused.
    public func read<Key: PageKey>(
        _ page: YediCommon.PageRequest?, as _: Key.Type, field: String = "page"
    ) throws(RPCError) -> (after: PagePosition<Key>?, limit: Int) {
        let requested = Int(page?.limit ?? 0)
        guard requested >= 0 else { throw FieldRule.invalid("\(field).limit", "must not be negative") }
        let limit = requested == 0 ? defaultLimit : min(requested, maximumLimit)
        guard let cursor = page?.cursor, !cursor.isEmpty else { return (nil, limit) }
        guard let position = decode(cursor, as: Key.self) else {
            throw FieldRule.invalid("\(field).cursor", "not a cursor from this list")
        }
        return (position, limit)
    }

    /// The page info after a page read with one extra row (`limit + 1` positions): the cursor after the
    /// last position shown, or "" when there is no more.
    public func next<Key: PageKey>(_ positions: [PagePosition<Key>], limit: Int) -> YediCommon.PageInfo {
        guard positions.count > limit, limit > 0 else { return YediCommon.PageInfo(nextCursor: "") }
        return YediCommon.PageInfo(nextCursor: cursor(after: positions[limit - 1]))
    }

    /// The cursor of the page after `position`.
    public func cursor<Key: PageKey>(after position: PagePosition<Key>) -> String {
        let key = Array(position.key.cursorText.utf8.prefix(Int(UInt16.max)))
        var body: [UInt8] = [Self.version, UInt8(key.count >> 8), UInt8(key.count & 0xFF)]
        body += key
        body += Array(position.id.utf8)
        return Base64URL.encode(body + mac(body))
    }

    func decode<Key: PageKey>(_ cursor: String, as _: Key.Type) -> PagePosition<Key>? {
        guard cursor.utf8.count <= Self.maximumCursorBytes, let bytes = Base64URL.decode(cursor),
            bytes.count >= Self.macBytes + 3
        else { return nil }
        let body = Array(bytes.dropLast(Self.macBytes))
        guard ConstantTime.equals(Array(bytes.suffix(Self.macBytes)), mac(body)), body[0] == Self.version else {
            return nil
        }
        let keyEnd = 3 + (Int(body[1]) << 8 | Int(body[2]))
        guard keyEnd <= body.count, let keyText = String(validating: body[3..<keyEnd], as: UTF8.self),
            let id = String(validating: body[keyEnd...], as: UTF8.self), let key = Key(cursorText: keyText)
        else { return nil }
        return PagePosition(key: key, id: id)
    }

    private func mac(_ body: [UInt8]) -> [UInt8] {
        Array(HMACSHA256.mac(key: key.bytes, Array(name.utf8) + [0] + body).prefix(Self.macBytes))
    }
}
