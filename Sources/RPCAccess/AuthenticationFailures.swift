import YediSync

/// Failed authentications on one connection, counted in a window: a connection past its budget is
/// closed (after its `UNAUTHENTICATED`), so one client cannot keep a server verifying bad tokens.
/// Kept in the connection's `PeerInfo` (`connectionState`), which lives exactly as long as the connection.
final class AuthenticationFailures: Sendable {
    private struct Window {
        var started: ContinuousClock.Instant
        var failures: Int
    }

    private let window = TSanVisibleMutex<Window?>(nil)

    init() {}

    /// Counts one failure at `now`; true when it is more than `limit` within `period`.
    func record(at now: ContinuousClock.Instant, limit: Int, period: Duration) -> Bool {
        window.withLock { window in
            if let current = window, now - current.started < period {
                window!.failures += 1
            } else {
                window = Window(started: now, failures: 1)
            }
            return window!.failures > limit
        }
    }
}
