import Foundation

/// One piece of timed work as stored in `runtime_scheduled_job`: "at `dueAtMilliseconds`, run the handler
/// of `kind` with `payload`".
public struct ScheduledJob: Sendable, Hashable {
    /// Chosen by the scheduling code so that scheduling twice is harmless (`reminder:<reservation id>`).
    public var id: String
    /// Which handler runs it (`Scheduler.handle(_:_:)`).
    public var kind: String
    /// What the job is about (a reservation, a hold, a promise), so that everything about it can be
    /// cancelled or moved at once when the subject changes; nil when nothing needs that.
    public var subject: String?
    public var payload: [UInt8]
    /// Wall-clock milliseconds, on the service's injected clock.
    public var dueAtMilliseconds: Int64
    /// Failed runs so far (the handler threw, or no handler knew the kind).
    public var attempts: Int

    public init(
        id: String, kind: String, subject: String? = nil, payload: [UInt8] = [], dueAtMilliseconds: Int64,
        attempts: Int = 0
    ) {
        self.id = id
        self.kind = kind
        self.subject = subject
        self.payload = payload
        self.dueAtMilliseconds = dueAtMilliseconds
        self.attempts = attempts
    }
}
