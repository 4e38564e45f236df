import ServiceRuntime

/// ChatService's live streams are the runtime's (`StreamHub`, docs/platform.md "Live streams"), keyed by
/// recipient: the store writes one event row per member, so each event belongs to one user's streams.
typealias ChatEventHub = StreamHub<ChatEventRecord>

extension ChatEventRecord: PositionedEvent {
    var streamKey: String { recipientID }
}

extension StreamHub where Event == ChatEventRecord {
    /// ChatService's hub: metrics `yedi_chat_streams_open` and `yedi_chat_stream_cutoffs_total`, 16 streams
    /// per user (devices); tests pass a small `capacity`.
    convenience init(capacity: Int = 1_024) {
        self.init(name: "chat", capacity: capacity, maxPerKey: 16)
    }
}

extension ChatEventRecord {
    /// A wake-up for `recipientID`'s streams on PostgreSQL, where the hub carries no bodies
    /// (`ResumableStream.liveFromLog`): only its key and position are read; the body is never sent.
    static func wakeUp(_ recipientID: String, position: Int64) -> ChatEventRecord {
        ChatEventRecord(
            position: position, recipientID: recipientID, body: .roomClosed(roomID: "", closedAtMilliseconds: 0))
    }
}
