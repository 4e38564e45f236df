import ServiceRuntime
import YediProto

/// SLP's events on PostgreSQL (`AccountEvents.matchStarted/matchEnded`'s twins): the same jobs to
/// ChatService, written by the transaction that starts or ends the match.
extension PostgresAccountEvents {
    /// Two SLP members were matched: ChatService opens the match's room (its id is the match id).
    func matchStarted(matchID: String, members: (String, String), in tx: PostgresTransaction) async throws {
        try await outbox.enqueue(
            in: tx, peer: "chat", method: YediChat.ChatService.Method.openMatchRoom,
            request: YediChat.OpenMatchRoomRequest(matchID: matchID, memberA: members.0, memberB: members.1))
    }

    /// An SLP match ended (EndMatch or a first rating): ChatService closes its room (readable, no sends).
    func matchEnded(matchID: String, in tx: PostgresTransaction) async throws {
        try await outbox.enqueue(
            in: tx, peer: "chat", method: YediChat.ChatService.Method.closeMatchRoom,
            request: YediChat.CloseMatchRoomRequest(matchID: matchID))
    }
}
