import ProtoBridge

/// What one server connection holds for its calls, against `WireLimits.maxConnectionBytes`: the
/// requests of calls whose handlers run (with the share set aside for their replies), and the replies
/// handlers produced that are not yet written to the socket.
///
/// A value the connection handler keeps and consults; it performs no I/O, so it is tested alone. A
/// reply is counted from the moment the connection takes it from its handler until the channel reports
/// it written: counting only the socket's queue would miss replies produced faster than it drains.
struct ConnectionMemoryBudget {
    let limit: Int
    /// Requests (payload, metadata, method) of calls whose handlers run, and what is set aside for
    /// their replies (`ReplySizeEstimate`).
    private(set) var heldByCalls = 0
    /// Reply frames taken from handlers and not yet written to the socket.
    private(set) var heldByReplies = 0

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes `bytes` for a call about to start; false (nothing taken) when they do not fit beside the
    /// calls running and the replies not yet sent (`queuedReplies`, the socket's own count, also has
    /// the connection's small frames in it: the larger of the two counts, not their sum).
    mutating func admitCall(_ bytes: Int, queuedReplies: Int) -> Bool {
        guard heldByCalls + max(heldByReplies, queuedReplies) + bytes <= limit else { return false }
        heldByCalls += bytes
        return true
    }

    /// The call's handler returned: its request (and what was set aside for its reply) is no longer held.
    mutating func callEnded(_ bytes: Int) {
        heldByCalls -= bytes
    }

    /// Sets `bytes` aside for the reply of a call about to start; false (nothing taken) when they do
    /// not fit. `alone`: nothing else set aside and no reply in flight, so it fits whatever its size
    /// (the call must be able to run, and it leaves alone).
    mutating func setAside(_ bytes: Int, alone: Bool) -> Bool {
        guard alone || heldByCalls + heldByReplies + bytes <= limit else { return false }
        heldByCalls += bytes
        return true
    }

    /// Takes `bytes` for a reply about to be written; false (nothing taken) when it does not fit. A
    /// reply always fits when no other is in flight: one larger than the budget still leaves, alone.
    mutating func admitReply(_ bytes: Int) -> Bool {
        guard heldByReplies == 0 || heldByCalls + heldByReplies + bytes <= limit else { return false }
        heldByReplies += bytes
        return true
    }

    /// Takes `bytes` for a reply whatever the budget: the connection is closing, and sends what it has.
    mutating func forceReply(_ bytes: Int) {
        heldByReplies += bytes
    }

    /// A reply left (written to the socket, or failed with the connection): it is no longer held.
    mutating func replyWritten(_ bytes: Int) {
        heldByReplies -= bytes
    }

    /// What a REQUEST frame makes the connection hold while its call runs: the payload, the metadata
    /// as the metadata limits count it (the reader's count), the method name, and a fixed share for the
    /// call's own objects.
    static func cost(of request: InboundFrame) -> Int {
        perCallOverhead + request.payload.readableBytes + request.method.utf8.count + request.metadataSize.bytes
    }

    /// The call's task, context, handle and table entry, roughly.
    static let perCallOverhead = 1024
}
