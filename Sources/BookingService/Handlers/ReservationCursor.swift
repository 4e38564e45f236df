import RPCCore
import YediProto

/// Opaque page cursors of reservation lists: the start and id of a page's last row (keyset pagination,
/// so rows added meanwhile cause no duplicates or gaps).
enum ReservationCursor {
    static let defaultLimit = 20
    static let maximumLimit = 50

    static func read(_ page: YediCommon.PageRequest?) throws(RPCError) -> (ReservationPosition?, Int) {
        let requested = Int(page?.limit ?? 0)
        guard requested >= 0 else { throw BookingRules.invalid("page.limit", "must not be negative") }
        let limit = requested == 0 ? defaultLimit : min(requested, maximumLimit)
        guard let cursor = page?.cursor, !cursor.isEmpty else { return (nil, limit) }
        let parts = cursor.split(separator: "_", maxSplits: 1)
        guard cursor.utf8.count <= 100, parts.count == 2, let start = Int64(parts[0]) else {
            throw BookingRules.invalid("page.cursor", "not a cursor from this list")
        }
        return (ReservationPosition(startAtMilliseconds: start, id: String(parts[1])), limit)
    }

    /// The cursor after a page read with one extra row: "" when there is no more.
    static func next(_ rows: [ReservationRecord], limit: Int) -> YediCommon.PageInfo {
        guard rows.count > limit else { return YediCommon.PageInfo(nextCursor: "") }
        let last = rows[limit - 1]
        return YediCommon.PageInfo(nextCursor: "\(last.startAtMilliseconds)_\(last.id)")
    }
}
