/// What `chat_room.open_key` holds: the value that at most one open room of a kind may have (a partial
/// unique index enforces it), so concurrent opens of one pair share a room while closed rooms of the same
/// pair stay.
enum RoomOpenKey {
    /// A pair, in its roles' order (consult: customer, designer). The first id's byte count comes first,
    /// so no two pairs spell the same key whatever their ids contain; `chat-3` writes existing rooms' keys
    /// the same way (`length(CAST(customer_id AS BLOB)) || ':' || customer_id || designer_id`).
    static func pair(_ first: String, _ second: String) -> String { "\(first.utf8.count):\(first)\(second)" }
}
