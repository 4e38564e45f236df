import RPCCore
import YediCrypto
import YediProto

/// Opaque page cursors: which list they belong to and the position of the last item of a page (an instant
/// and an id), so the next page starts strictly after it (keyset pagination on `(instant, id)` descending).
/// Rows added meanwhile sort before the cursor or after it, never into pages already served: no item that
/// existed when paging began is shown twice or skipped.
enum PageCursor {
    enum List: String {
        case posts = "p"
        case likes = "l"
        case reviews = "r"
    }

    static let maximumLimit = 50

    static func read(_ page: YediCommon.PageRequest?, list: List, defaultLimit: Int) throws(RPCError) -> (
        position: ListPosition?, limit: Int
    ) {
        let requested = Int(page?.limit ?? 0)
        guard requested >= 0 else {
            throw RPCError(code: .invalidArgument, message: "page.limit: must not be negative")
        }
        let limit = requested == 0 ? defaultLimit : min(requested, maximumLimit)
        guard let cursor = page?.cursor, !cursor.isEmpty else { return (nil, limit) }
        let malformed = RPCError(code: .invalidArgument, message: "page.cursor: not a cursor from this list")
        guard cursor.utf8.count <= 512, let bytes = Base64URL.decode(cursor),
            let text = String(bytes: bytes, encoding: .utf8)
        else { throw malformed }
        let parts = text.split(separator: "\u{0}", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "1", parts[1] == list.rawValue, let instant = Int64(parts[2]),
            !parts[3].isEmpty
        else { throw malformed }
        return (ListPosition(milliseconds: instant, id: String(parts[3])), limit)
    }

    static func encode(_ position: ListPosition, list: List) -> String {
        Base64URL.encode(Array("1\u{0}\(list.rawValue)\u{0}\(position.milliseconds)\u{0}\(position.id)".utf8))
    }

    /// The cursor after a page read with one extra row (`limit + 1`): "" when there is no more.
    static func next(_ positions: [ListPosition], limit: Int, list: List) -> YediCommon.PageInfo {
        guard positions.count > limit else { return YediCommon.PageInfo(nextCursor: "") }
        return YediCommon.PageInfo(nextCursor: encode(positions[limit - 1], list: list))
    }
}
