import RPCCore
import ServiceRuntime
import YediProto

/// SLP's match rooms (docs/slp.md): AccountService's outbox opens one in the transaction that matches two
/// members and closes it in the one that ends the match. The room id is the match id, so a repeated
/// delivery finds its room (the primary key) and a repeated closing keeps the first closing time: both
/// are idempotent without a receipt of their own.
extension ChatHandlers {
    func openMatchRoom(
        _ request: YediChat.OpenMatchRoomRequest, context: ServerContext
    ) async throws -> YediChat.OpenMatchRoomResponse {
        let matchID = try FieldRule.id(request.matchID, field: "match_id")
        let memberA = try FieldRule.id(request.memberA, field: "member_a")
        let memberB = try FieldRule.id(request.memberB, field: "member_b")
        guard memberA != memberB else { throw FieldRule.invalid("member_b", "the other member of the match") }
        if try await store.room(id: matchID) != nil { return YediChat.OpenMatchRoomResponse(created: false) }
        do {
            _ = try await store.createRoom(
                id: matchID, kind: RoomRecord.slpMatchKind,
                members: [
                    RoomMemberRecord(userID: memberA, role: RoomRecord.matchMemberRole),
                    RoomMemberRecord(userID: memberB, role: RoomRecord.matchMemberRole),
                ],
                now: clock.nowMilliseconds)
        } catch {
            // A concurrent delivery of the same job made it first (the id is the primary key).
            guard try await store.room(id: matchID) != nil else { throw error }
            return YediChat.OpenMatchRoomResponse(created: false)
        }
        return YediChat.OpenMatchRoomResponse(created: true)
    }

    func closeMatchRoom(
        _ request: YediChat.CloseMatchRoomRequest, context: ServerContext
    ) async throws -> YediChat.CloseMatchRoomResponse {
        let matchID = try FieldRule.id(request.matchID, field: "match_id")
        guard let room = try await store.room(id: matchID), room.kind == RoomRecord.slpMatchKind else {
            throw RPCError(code: .notFound, message: "match_id: no such match room")
        }
        let closed = try await store.closeRoom(id: matchID, now: clock.nowMilliseconds)
        // Sends check the cached room first: it must say closed from now on.
        cache.remember(closed)
        return YediChat.CloseMatchRoomResponse(closedAtMs: closed.closedAtMilliseconds ?? 0)
    }

    /// SLP's match rooms take text only, and nothing once the match has ended (the room stays readable).
    /// Other rooms pass.
    static func checkMatchRoom(_ room: RoomRecord, body: YediChat.SendMessageRequest.Body?) throws(RPCError) {
        guard room.kind == RoomRecord.slpMatchKind else { return }
        guard case .text? = body else { throw FieldRule.invalid("body", "a match room takes text only") }
        guard !room.isClosed else {
            throw RPCError(code: .failedPrecondition, message: "room_id: the match has ended")
        }
    }
}
