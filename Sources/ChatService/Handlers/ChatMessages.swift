import YediProto

/// Records to protos.
enum ChatMessages {
    static func message(_ record: MessageRecord, readSeqs: [String: Int64]) -> YediChat.ChatMessage {
        let recipientRead = readSeqs.contains { $0.key != record.senderID && $0.value >= record.seq }
        return message(record, readByRecipient: recipientRead)
    }

    static func message(_ record: MessageRecord, readByRecipient: Bool) -> YediChat.ChatMessage {
        YediChat.ChatMessage(
            id: record.id, roomID: record.roomID, seq: record.seq, senderID: record.senderID,
            sentAtMs: record.sentAtMilliseconds, body: body(record.body), readByRecipient: readByRecipient,
            clientMessageID: record.clientMessageID ?? "")
    }

    static func body(_ body: MessageBodyRecord) -> YediChat.ChatMessage.Body {
        switch body {
        case .text(let text): .text(.init(text: text))
        case .image(let image): .image(.init(image: ref(image)))
        case .postShare(let postID, let title, let photo, let text):
            .postShare(.init(postID: postID, postTitle: title, firstPhoto: photo.map(ref), text: text))
        case .reservation(let id, let start): .reservation(.init(reservationID: id, startAtMs: start))
        }
    }

    static func ref(_ image: ImageRecord) -> YediCommon.ImageRef {
        YediCommon.ImageRef(id: image.id, url: image.url, width: image.width, height: image.height)
    }

    static func kind(_ kind: String) -> YediChat.RoomKind {
        switch kind {
        case RoomRecord.consultKind: .consult
        case RoomRecord.slpMatchKind: .slpMatch
        default: .unspecified
        }
    }

    /// The room as `viewer` sees it (without the other member's name: the caller adds it).
    static func room(_ room: RoomRecord) -> YediChat.Room {
        YediChat.Room(
            id: room.id, kind: kind(room.kind), customerID: room.customerID, designerID: room.designerID,
            lastActivityAtMs: room.lastActivityAtMilliseconds, createdAtMs: room.createdAtMilliseconds,
            closed: room.isClosed)
    }

    static func event(_ record: ChatEventRecord) -> YediChat.StreamEvent {
        switch record.body {
        case .messageAdded(let message):
            return .init(
                position: record.position,
                event: .messageAdded(.init(message: Self.message(message, readByRecipient: false))))
        case .readCursorMoved(let roomID, let readerID, let readSeq, let readAt):
            return .init(
                position: record.position,
                event: .readCursorMoved(
                    .init(roomID: roomID, readerID: readerID, readSeq: readSeq, readAtMs: readAt)))
        case .roomCreated(let room):
            return .init(position: record.position, event: .roomCreated(.init(room: Self.room(room))))
        case .roomClosed(let roomID, let closedAt):
            return .init(position: record.position, event: .roomClosed(.init(roomID: roomID, closedAtMs: closedAt)))
        }
    }
}
