/// Who has a live stream open: a match room's message is pushed to a member without one (issue 28,
/// "Match chat").
///
/// On SQLite the one process's hub knows every stream. On PostgreSQL a member may listen on another
/// replica, so `PostgresStreamPresence` also asks the table where each replica lists its users.
protocol StreamPresence: Sendable {
    /// The users of `userIDs` with a stream open now, here or (on PostgreSQL) on another replica.
    func withOpenStreams(among userIDs: [String]) async -> Set<String>
}

extension ChatEventHub: StreamPresence {
    func withOpenStreams(among userIDs: [String]) async -> Set<String> {
        Set(userIDs.filter { isOpen(key: $0) })
    }
}
