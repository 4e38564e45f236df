import RPCCore

extension RPCError {
    /// `RESOURCE_EXHAUSTED` saying when to try again: in the message ("…; try again in N s") and as
    /// `retry-after` metadata (whole seconds), which clients and the probe's load scenario read. Every
    /// limit that refuses for a while answers this way.
    public static func tryAgainLater(_ message: String, inSeconds seconds: Int) -> RPCError {
        RPCError(
            code: .resourceExhausted, message: "\(message); try again in \(seconds) s",
            metadata: ["retry-after": "\(seconds)"])
    }

    /// The same, until an instant (milliseconds): the seconds left rounded up, at least 1.
    public static func tryAgainLater(_ message: String, untilMilliseconds until: Int64, now: Int64) -> RPCError {
        tryAgainLater(message, inSeconds: Int(max(1, (until - now + 999) / 1_000)))
    }
}
