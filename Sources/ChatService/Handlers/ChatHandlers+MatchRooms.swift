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
        return YediChat.OpenMatchRoomResponse(created: try await createMatchRoom(matchID, members: (memberA, memberB)))
    }

    /// Creates the match's room unless it exists (answers whether it did).
    private func createMatchRoom(_ matchID: String, members: (String, String)) async throws -> Bool {
        if try await store.room(id: matchID) != nil { return false }
        do {
            _ = try await store.createRoom(
                id: matchID, kind: RoomRecord.slpMatchKind,
                members: [
                    RoomMemberRecord(userID: members.0, role: RoomRecord.matchMemberRole),
                    RoomMemberRecord(userID: members.1, role: RoomRecord.matchMemberRole),
                ],
                now: clock.nowMilliseconds)
        } catch {
            // A concurrent delivery (or a member's send) made it first: the id is the primary key.
            guard try await store.room(id: matchID) != nil else { throw error }
            return false
        }
        return true
    }

    /// An SLP member's send to a room this service has not heard of: asks AccountService whether it is
    /// an active match of the sender's (the outbox's OpenMatchRoom may not have arrived yet) and opens
    /// it if so. Anything else is left to the send's own checks (NOT_FOUND).
    func openMatchRoomOnSend(_ roomID: String, sender: String) async throws {
        guard !roomID.isEmpty, roomID.utf8.count <= FieldRule.maxIDBytes, cache.room(roomID) == nil,
            try await store.room(id: roomID) == nil
        else { return }
        let members = try await ChatPeers.checking("AccountService") { try await peers.activeMatch(roomID) }
        guard let members, members.0 == sender || members.1 == sender else { return }
        _ = try await createMatchRoom(roomID, members: members)
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
