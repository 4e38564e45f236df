import NIOCore

/// Replies and the connection's memory budget: a reply is written when the budget has room and held
/// (in order) until it has, its bytes given back once written; a peer that takes none of them for the
/// stall timeout is dropped. The rules are the state machine's; this is their I/O.
extension ServerConnectionHandler {
    /// Writes a reply frame (a stream's MESSAGE when `messageOf` is its call) if the budget has room for
    /// it, or leaves it with the state machine until it has; true when written.
    @discardableResult
    func sendReply(_ frame: ByteBuffer, messageOf call: RunningCall? = nil) -> Bool {
        let reply = QueuedReply(frame: frame, messageOf: call)
        switch state.replyProduced(reply, bytes: frame.readableBytes, at: NIODeadline.now()) {
        case .write:
            writeCounted(frame)
            armStallTimer()
            return true
        case .wait:
            armStallTimer()
            return false
        }
    }

    /// Writes a reply the budget counts, and gives its bytes back once it is written (in batches:
    /// `FrameOutput.write(counted:)`, `replyWritten`).
    func writeCounted(_ frame: ByteBuffer) {
        output?.write(counted: frame)
    }

    /// A reply left: the replies waiting that fit now are written, in order. A stream message whose
    /// call is over for its client is dropped (its writer was already told).
    func replyWritten(_ bytes: Int) {
        var released = [bytes]
        while let next = released.popLast() {
            for waiting in state.replyWritten(bytes: next, at: NIODeadline.now()) {
                let reply = waiting.reply
                guard let call = reply.messageOf else {
                    writeCounted(reply.frame)
                    continue
                }
                call.messageWaiting = false
                guard state.isSending(call.id) else {
                    released.append(reply.frame.readableBytes)
                    continue
                }
                writeCounted(reply.frame)
                if call.window > 0, context?.channel.isWritable == true { resumeWriter(of: call) }
            }
        }
        startHeldCalls()
    }

    /// Watches the replies outstanding: a peer that takes none of them for `replyStallTimeout` is
    /// dropped, which frees them and cancels its calls.
    func armStallTimer(at deadline: NIODeadline? = nil) {
        guard stallTimer == nil, let context, let due = deadline ?? state.nextStallCheck else { return }
        stallTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: due) {
            self.stallTimer = nil
            guard let context = self.context else { return }
            let queued = (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
            switch self.state.stallCheck(at: NIODeadline.now(), queuedBytes: queued) {
            case .nothing: break
            case .checkAgain(let next):
                self.armStallTimer(at: next)
            case .close:
                self.logger.notice(
                    "closing a connection whose peer read none of its replies for \(self.configuration.replyStallTimeout)"
                )
                context.close(promise: nil)
            }
        }
    }
}
