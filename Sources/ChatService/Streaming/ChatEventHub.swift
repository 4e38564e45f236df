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
