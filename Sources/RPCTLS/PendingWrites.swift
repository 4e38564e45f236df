import NIOCore

/// Plaintext the application wrote but we have not encrypted yet, and the promises waiting on it.
///
/// Writes queue up until `flush`; then everything flushed is encrypted in one pass, coalescing runs
/// of small writes into full-size TLS records (one `SSL_write` each) so that a burst of tiny messages
/// costs one record, one AEAD seal and one syscall rather than one of each per message. Writes of a
/// record or more are encrypted in place, without the extra copy.
struct PendingWrites {
    private typealias Write = (buffer: ByteBuffer, promise: EventLoopPromise<Void>?)

    /// In write order; the first `flushedCount` have been flushed.
    private var writes = CircularBuffer<Write>(initialCapacity: 16)
    private var flushedCount = 0
    /// Small flushed writes gathered into one record, reused across flushes.
    private var coalesced: ByteBuffer
    /// Promises of the writes now in `coalesced`.
    private var coalescedPromises: [EventLoopPromise<Void>] = []
    /// Promises of writes whose bytes are all in ciphertext now; they complete with the channel write.
    private var encryptedPromises: [EventLoopPromise<Void>] = []

    private static let recordSize = TLSCipherPolicy.maximumRecordPlaintext

    init(allocator: ByteBufferAllocator) {
        self.coalesced = allocator.buffer(capacity: Self.recordSize)
    }

    var hasFlushedWrites: Bool { self.flushedCount > 0 || self.coalesced.readableBytes > 0 }

    mutating func append(_ buffer: ByteBuffer, promise: EventLoopPromise<Void>?) {
        self.writes.append((buffer, promise))
    }

    mutating func markFlushed() {
        self.flushedCount = self.writes.count
    }

    /// Encrypts every flushed write. Stops early only if OpenSSL needs to read first (`.wantMore`:
    /// call again after the next read) or fails (then the caller fails everything).
    mutating func encryptFlushed(with connection: SSLConnection) -> SSLConnection.Step {
        while true {
            if self.coalesced.readableBytes > 0 || !self.coalescedPromises.isEmpty {
                switch connection.write(&self.coalesced) {
                case .complete:
                    self.coalesced.clear()
                    self.encryptedPromises.append(contentsOf: self.coalescedPromises)
                    self.coalescedPromises.removeAll(keepingCapacity: true)
                case let other:
                    return other
                }
            }
            guard self.flushedCount > 0 else { return .complete }

            if self.shouldCoalesceFirst() {
                self.gatherSmallWrites()
                continue
            }
            var buffer = self.writes.first!.buffer
            switch connection.write(&buffer) {
            case .complete:
                let write = self.writes.removeFirst()
                self.flushedCount -= 1
                if let promise = write.promise { self.encryptedPromises.append(promise) }
            case let other:
                self.writes[self.writes.startIndex].buffer = buffer  // the rest, to retry
                return other
            }
        }
    }

    /// Coalesce only when it saves a record: the first flushed write is below record size and the next
    /// flushed one fits alongside it. A lone small write (the echo case) goes straight to SSL_write.
    private func shouldCoalesceFirst() -> Bool {
        guard self.flushedCount >= 2 else { return false }
        let first = self.writes[self.writes.startIndex].buffer.readableBytes
        let second = self.writes[self.writes.index(after: self.writes.startIndex)].buffer.readableBytes
        return first + second <= Self.recordSize
    }

    private mutating func gatherSmallWrites() {
        while self.flushedCount > 0,
            self.coalesced.readableBytes + self.writes.first!.buffer.readableBytes <= Self.recordSize
        {
            var write = self.writes.removeFirst()
            self.flushedCount -= 1
            self.coalesced.writeBuffer(&write.buffer)
            if let promise = write.promise { self.coalescedPromises.append(promise) }
        }
    }

    /// One promise for the channel write carrying the ciphertext, completing the encrypted writes' promises
    /// in order. Allocates nothing for the common cases of no promise or exactly one.
    mutating func takeEncryptedPromise(on eventLoop: EventLoop) -> EventLoopPromise<Void>? {
        switch self.encryptedPromises.count {
        case 0:
            return nil
        case 1:
            let promise = self.encryptedPromises[0]
            self.encryptedPromises.removeAll(keepingCapacity: true)
            return promise
        default:
            let promises = self.encryptedPromises
            self.encryptedPromises = []
            let combined = eventLoop.makePromise(of: Void.self)
            combined.futureResult.whenComplete { result in
                for promise in promises { promise.completeWith(result) }
            }
            return combined
        }
    }

    /// Fails writes that were never flushed (flushed ones are kept for a final encrypt).
    mutating func failUnflushed(_ error: any Error) {
        while self.writes.count > self.flushedCount {
            self.writes.removeLast().promise?.fail(error)
        }
    }

    /// Fails every write not yet handed to the channel.
    mutating func failAll(_ error: any Error) {
        for promise in self.encryptedPromises { promise.fail(error) }
        for promise in self.coalescedPromises { promise.fail(error) }
        self.encryptedPromises.removeAll()
        self.coalescedPromises.removeAll()
        self.coalesced.clear()
        while let write = self.writes.popFirst() {
            write.promise?.fail(error)
        }
        self.flushedCount = 0
    }
}
