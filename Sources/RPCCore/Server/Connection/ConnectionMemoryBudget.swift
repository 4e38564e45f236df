import ProtoBridge

/// What one server connection holds for its calls, against `WireLimits.maxConnectionBytes`: the
/// requests of calls whose handlers run, and replies written but not yet sent.
///
/// A value the connection handler keeps and consults; it performs no I/O, so it is tested alone. The
/// replies not yet sent are the channel's own count (its buffered writable bytes), read when a call asks
/// to start: the connection already stops reading while the channel is not writable.
struct ConnectionMemoryBudget {
    let limit: Int
    /// Requests (payload, metadata, method) of calls whose handlers run.
    private(set) var heldByCalls = 0

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes `bytes` for a call about to start; false (nothing taken) when they do not fit beside the
    /// calls running and `queuedReplies`.
    mutating func admitCall(_ bytes: Int, queuedReplies: Int) -> Bool {
        guard heldByCalls + queuedReplies + bytes <= limit else { return false }
        heldByCalls += bytes
        return true
    }

    /// The call's handler returned: its request is no longer held.
    mutating func callEnded(_ bytes: Int) {
        heldByCalls -= bytes
    }

    /// What a REQUEST frame makes the connection hold while its call runs: the payload, the metadata
    /// as the metadata limits count it, the method name, and a fixed share for the call's own objects.
    static func cost(of request: InboundFrame) -> Int {
        var bytes = perCallOverhead + request.payload.readableBytes + request.method.utf8.count
        for entry in request.metadata {
            bytes += WireLimits.metadataEntryOverhead + entry.key.utf8.count + entry.value.utf8.count
        }
        return bytes
    }

    /// The call's task, context, handle and table entry, roughly.
    static let perCallOverhead = 1024
}
