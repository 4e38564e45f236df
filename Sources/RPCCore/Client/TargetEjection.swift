/// Which of a client's targets (replicas) are out of the rotation for a while: a target that answered
/// `UNAVAILABLE` `threshold` times in a row (a replica whose database is gone is NOT_SERVING and answers
/// every call so) is skipped until its backoff has passed, then tried again: one more failure ejects it
/// for twice as long, any other answer puts it back for good. Failures while it is out (calls that were
/// already in flight) do not lengthen it. A value: `ConnectionPool` keeps it under a lock and passes the time, so tests need no sockets.
///
/// Never a reason to fail a call: when every ready target is ejected, `ConnectionPool` uses them anyway
/// (a lone replica that is briefly unavailable is still the best there is).
struct TargetEjection: Sendable {
    private struct Entry {
        var failuresInARow = 0
        var lastFailure: ContinuousClock.Instant
        var ejectedUntil: ContinuousClock.Instant?
    }

    let backoff: Backoff
    /// Failures in a row before the first ejection (at least 1).
    let threshold: Int
    private var entries: [ClientConfiguration.Target: Entry] = [:]

    init(backoff: Backoff, threshold: Int) {
        self.backoff = backoff
        self.threshold = max(1, threshold)
    }

    /// The target answered `UNAVAILABLE`: from the `threshold`-th time in a row, out of the rotation for
    /// the next backoff (`random` in 0..<1 for its jitter). Answers how long, or nil while under the
    /// threshold.
    @discardableResult
    mutating func recordUnavailable(
        _ target: ClientConfiguration.Target, now: ContinuousClock.Instant, random: Double
    ) -> Duration? {
        var entry = entries[target] ?? Entry(lastFailure: now)
        entry.lastFailure = now
        defer { entries[target] = entry }
        // Calls that were in flight when it went out fail together (a replica killed under load answers
        // them all at once): one event, not a reason to keep it out longer. Only a failure after it came
        // back (its probe) doubles the backoff.
        if let until = entry.ejectedUntil, now < until { return nil }
        entry.failuresInARow += 1
        guard entry.failuresInARow >= threshold else { return nil }
        let delay = backoff.delay(attempt: entry.failuresInARow - threshold + 1, random: random)
        entry.ejectedUntil = now + delay
        return delay
    }

    /// The target answered something else: back in, and its next failure starts the backoff over.
    mutating func recordAnswer(_ target: ClientConfiguration.Target) {
        entries[target] = nil
    }

    /// Forgets targets whose last failure is older than the longest backoff and that are not ejected: one
    /// that failed and was never called again (it went away) must not keep the pool off its fast path.
    mutating func forgetStale(now: ContinuousClock.Instant) {
        entries = entries.filter { _, entry in
            (entry.ejectedUntil.map { now < $0 } ?? false) || now - entry.lastFailure < backoff.maximum
        }
    }

    /// The targets out of the rotation at `now`.
    func ejectedTargets(now: ContinuousClock.Instant) -> Set<ClientConfiguration.Target> {
        Set(entries.compactMap { target, entry in (entry.ejectedUntil.map { now < $0 } ?? false) ? target : nil })
    }

    /// Whether any target has failed since its last other answer (the pool's fast path skips the lock
    /// while none has).
    var isEmpty: Bool { entries.isEmpty }

    func isEjected(_ target: ClientConfiguration.Target, now: ContinuousClock.Instant) -> Bool {
        guard let until = entries[target]?.ejectedUntil else { return false }
        return now < until
    }
}
