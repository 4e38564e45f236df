import Foundation
import RPCCore
import YediCrypto
import YediProto

/// Opaque page cursors: the position of the last item of a page (a sort key and an id), so the next page
/// starts after it (keyset pagination: no duplicates or gaps when rows are added meanwhile).
enum PageCursor {
    static let defaultLimit = 20
    static let maximumLimit = 50

    static func read(_ page: YediCommon.PageRequest?, field: String) throws(RPCError) -> (
        position: ListPosition?, limit: Int
    ) {
        let requested = Int(page?.limit ?? 0)
        guard requested >= 0 else { throw FieldRules.invalid("\(field).limit", "must not be negative") }
        let limit = requested == 0 ? defaultLimit : min(requested, maximumLimit)
        guard let cursor = page?.cursor, !cursor.isEmpty else { return (nil, limit) }
        guard cursor.utf8.count <= 1_024, let bytes = Base64URL.decode(cursor),
            let text = String(bytes: bytes, encoding: .utf8), let separator = text.firstIndex(of: "\u{0}")
        else { throw FieldRules.invalid("\(field).cursor", "not a cursor from this list") }
        return (ListPosition(key: String(text[..<separator]), id: String(text[text.index(after: separator)...])), limit)
    }

    /// The cursor after a page read with one extra row (`limit + 1`): "" when there is no more.
    static func next<Item>(_ rows: [(Item, ListPosition)], limit: Int) -> YediCommon.PageInfo {
        guard rows.count > limit else { return YediCommon.PageInfo(nextCursor: "") }
        let last = rows[limit - 1].1
        return YediCommon.PageInfo(nextCursor: Base64URL.encode(Array("\(last.key)\u{0}\(last.id)".utf8)))
    }
}
