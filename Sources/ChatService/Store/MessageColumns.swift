/// A message body as `chat_message`'s columns, on either engine: text (text, or a post share's note),
/// ref_id (the image, post or reservation id), title (post title), image (the image or the post's first
/// photo), start_at_ms (reservation); and back.
struct MessageColumns {
    var kind: String
    var text = ""
    var refID = ""
    var title = ""
    var image: ImageRecord?
    var startAt: Int64 = 0

    init(_ body: MessageBodyRecord) {
        switch body {
        case .text(let value):
            kind = "text"
            text = value
        case .image(let value):
            kind = "image"
            refID = value.id
            image = value
        case .postShare(let postID, let postTitle, let photo, let note):
            kind = "post"
            refID = postID
            title = postTitle
            image = photo
            text = note
        case .reservation(let id, let start):
            kind = "reservation"
            refID = id
            startAt = start
        }
    }

    init(kind: String, text: String, refID: String, title: String, image: ImageRecord?, startAt: Int64) {
        self.kind = kind
        self.text = text
        self.refID = refID
        self.title = title
        self.image = image
        self.startAt = startAt
    }

    /// The body these columns hold (an unknown kind reads as text).
    var body: MessageBodyRecord {
        switch kind {
        case "image": .image(image ?? ImageRecord(id: refID, url: "", width: 0, height: 0))
        case "post": .postShare(postID: refID, title: title, firstPhoto: image, text: text)
        case "reservation": .reservation(id: refID, startAtMilliseconds: startAt)
        default: .text(text)
        }
    }
}

/// An event body as `chat_event`'s columns, on either engine: a message's seq; a read mark's reader,
/// cursor and time; a closing's time (kept in read_at_ms). A room-created event needs none.
struct EventColumns {
    var seq: Int64 = 0
    var readerID = ""
    var readSeq: Int64 = 0
    var readAt: Int64 = 0

    init(_ body: ChatEventBody) {
        switch body {
        case .messageAdded(let message): seq = message.seq
        case .readCursorMoved(_, let reader, let cursor, let at):
            readerID = reader
            readSeq = cursor
            readAt = at
        case .roomCreated: break
        case .roomClosed(_, let at): readAt = at
        }
    }
}
