import Logging
import RPCCore

extension StreamHub where Key == String {
    /// What a store writes with `pg_notify(channel, payload)` for this hub: `key:position` wakes the key's
    /// streams, `key:end` ends them (the key's owner was deleted). Ids only: a body may not fit in
    /// NOTIFY's 8,000 bytes, and every replica reads the bodies from the database anyway.
    public static func wakeUpPayload(_ key: String, position: Int64) -> String { "\(key):\(position)" }
    public static func endPayload(_ key: String) -> String { "\(key):end" }

    /// The listener that feeds this hub on PostgreSQL (docs/postgres.md, "Chat on PostgreSQL"): a
    /// notification wakes the key's local streams (`wakeUp` makes the event the hub carries; only its
    /// key and position are read, by streams made with `ResumableStream(liveFromLog: true)`); `key:end`
    /// ends them with `ended`. Listening again after a loss wakes every stream to re-read; lost for
    /// longer than the listener's limit, every stream ends with UNAVAILABLE and new ones are refused
    /// until it is back.
    public func postgresListener(
        _ postgres: ServicePostgres, channel: String, logger: Logger,
        wakeUp: @escaping @Sendable (String, Int64) -> Event, ended: RPCError
    ) -> PostgresNotificationListener {
        PostgresNotificationListener(
            postgres: postgres, channel: channel, logger: logger,
            received: { payload in
                guard let colon = payload.lastIndex(of: ":") else { return }
                let key = String(payload[..<colon])
                let tail = payload[payload.index(after: colon)...]
                if tail == "end" {
                    self.end(key: key, ended)
                } else if let position = Int64(tail) {
                    self.publish([wakeUp(key, position)])
                }
            },
            listening: {
                self.resume()
                // Notifications sent while nobody listened are gone: every stream re-reads.
                self.publishToEveryKey { wakeUp($0, .max) }
            },
            lost: {
                self.suspend(
                    RPCError(
                        code: .unavailable,
                        message:
                            "live events cannot be promised on this replica now; subscribe again elsewhere with after_position = your last position"
                    ))
            })
    }
}
