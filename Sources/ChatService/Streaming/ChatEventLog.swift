import ServiceRuntime

/// The chat store as the stored half of a resumable stream: a recipient's `chat_event` rows after a
/// position, the highest position given out, and how far retention pruned the recipient's events.
struct ChatEventLog: StreamEventLog {
    let store: any ChatStore

    func events(for recipientID: String, after position: Int64, limit: Int) async throws -> [ChatEventRecord] {
        try await store.events(recipientID: recipientID, afterPosition: position, limit: limit)
    }

    func highestPosition(for recipientID: String) async throws -> Int64 {
        try await store.highestPosition(recipientID: recipientID)
    }

    func prunedThrough(_ recipientID: String) async throws -> Int64 {
        try await store.prunedThrough(recipientID: recipientID)
    }

    func eventsAndWatermark(for recipientID: String, after position: Int64, limit: Int) async throws -> (
        events: [ChatEventRecord], prunedThrough: Int64
    ) {
        try await store.eventsAndWatermark(recipientID: recipientID, afterPosition: position, limit: limit)
    }

    func eventsWatermarkAndHead(for recipientID: String, after position: Int64, limit: Int) async throws -> (
        events: [ChatEventRecord], prunedThrough: Int64, highestPosition: Int64
    ) {
        try await store.eventsWatermarkAndHead(recipientID: recipientID, afterPosition: position, limit: limit)
    }
}
