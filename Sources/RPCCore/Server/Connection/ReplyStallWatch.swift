import NIOCore

/// Whether a connection's replies are moving: a peer that stops reading must not keep the replies it
/// was sent (and the calls behind them) in memory for as long as it keeps the connection open.
///
/// The clock runs while replies are outstanding (taken from handlers and not yet written). Progress is
/// a reply fully written, or fewer bytes queued in the socket than at the previous check (a slow reader
/// that drains a large reply a little at a time is moving), checked three times per `timeout`. No
/// progress for `timeout`: stalled, and the connection is closed. A value with the time passed in,
/// tested without sockets or timers.
struct ReplyStallWatch {
    /// Zero never declares a stall.
    let timeout: TimeAmount
    /// When replies last moved, or began to be outstanding; nil while none is.
    private(set) var lastProgress: NIODeadline?
    /// The socket's queued bytes at the previous check.
    private var queuedAtLastCheck = Int.max

    /// 30 s: three times the client's keepalive timeout, so a live peer that reads is never cut.
    static let defaultTimeout = TimeAmount.seconds(30)

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    enum Verdict: Equatable {
        /// Nothing outstanding: no check is due.
        case idle
        /// Check again at this instant.
        case moving(checkAgainAt: NIODeadline)
        /// No progress for `timeout`: close the connection.
        case stalled
    }

    /// When the next check is due; nil when none is (nothing outstanding, or no timeout).
    var nextCheck: NIODeadline? {
        guard timeout > .zero, let lastProgress else { return nil }
        return lastProgress + interval
    }

    /// Between checks: a third of the timeout, so that a queue that drains is seen before it is too late.
    private var interval: TimeAmount { .nanoseconds(max(1, timeout.nanoseconds / 3)) }

    /// A reply was taken from its handler (written or waiting): the clock starts if it was not running.
    mutating func replyTaken(at now: NIODeadline) {
        if lastProgress == nil {
            lastProgress = now
            queuedAtLastCheck = .max
        }
    }

    /// A reply was written: progress; the clock stops when nothing is left outstanding.
    mutating func replyWritten(at now: NIODeadline, outstanding: Bool) {
        lastProgress = outstanding ? now : nil
    }

    /// The check's timer fired; `queuedBytes` is what the socket holds now.
    mutating func check(at now: NIODeadline, queuedBytes: Int) -> Verdict {
        guard timeout > .zero, var last = lastProgress else { return .idle }
        if queuedBytes < queuedAtLastCheck, queuedAtLastCheck != .max {
            last = now
            lastProgress = now
        }
        queuedAtLastCheck = queuedBytes
        guard now - last < timeout else { return .stalled }
        return .moving(checkAgainAt: min(last + timeout, now + interval))
    }
}
