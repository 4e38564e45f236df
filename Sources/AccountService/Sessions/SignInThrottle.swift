import RPCCore

/// Slows password guessing: after `maximumFailures` wrong passwords for one email within `window`, that
/// email is locked for `lockout`. Kept in the store, so a restart does not reset it. Unknown emails are
/// counted the same way, so the throttle says nothing about which emails exist.
struct SignInThrottle: Sendable {
    var maximumFailures = 5
    var windowMilliseconds: Int64 = 15 * 60 * 1_000
    var lockoutMilliseconds: Int64 = 15 * 60 * 1_000

    /// Throws `RESOURCE_EXHAUSTED` with a `retry-after` (seconds) while the email is locked.
    func check(_ record: ThrottleRecord?, now: Int64) throws(RPCError) {
        guard let record, record.lockedUntilMilliseconds > now else { return }
        let seconds = (record.lockedUntilMilliseconds - now + 999) / 1_000
        throw RPCError(
            code: .resourceExhausted,
            message: "too many failed sign-ins for this email; try again in \(seconds) s",
            metadata: ["retry-after": "\(seconds)"])
    }

    /// The record after one more failure at `now`.
    func failed(_ record: ThrottleRecord?, now: Int64) -> ThrottleRecord {
        var record = record ?? ThrottleRecord(failures: 0, windowStartedAtMilliseconds: now, lockedUntilMilliseconds: 0)
        if now - record.windowStartedAtMilliseconds > windowMilliseconds {
            record = ThrottleRecord(failures: 0, windowStartedAtMilliseconds: now, lockedUntilMilliseconds: 0)
        }
        record.failures += 1
        if record.failures >= maximumFailures {
            record.lockedUntilMilliseconds = now + lockoutMilliseconds
            record.failures = 0
            record.windowStartedAtMilliseconds = now
        }
        return record
    }
}
