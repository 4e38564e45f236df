import Logging
import PostgresNIO
import ServiceLifecycle
import YediSync

/// A replica's ear on one `NOTIFY` channel (docs/postgres.md, "Chat on PostgreSQL"): one dedicated
/// connection outside the pool (a pooled one would be handed to queries), `LISTEN`, and each payload to
/// `received`; a `SELECT 1` on it every `lostAfter / 2` notices a connection that died silently.
///
/// PostgreSQL keeps no notification for a listener that is away. So when the connection is lost it
/// reconnects with back-off (0.1 s doubling to 1 s) and, once listening again, calls `listening`, whose
/// job is to make everyone who depends on the channel re-read what they may have missed. Not back within
/// `lostAfter` (plus at most one connection attempt's 2 s), it calls `lost` once (the caller ends what it
/// cannot promise any more) and reports trouble, so the replica's health says NOT_SERVING
/// (`PostgresHealthWatch`); `listening` then tells it it is back, and the trouble is cleared.
public final class PostgresNotificationListener: Service {
    public static let defaultLostAfter: Duration = .seconds(5)

    private let postgres: ServicePostgres
    private let channel: String
    private let logger: Logger
    private let lostAfter: Duration
    private let received: @Sendable (String) -> Void
    private let listening: @Sendable () -> Void
    private let lost: @Sendable () -> Void
    /// When the connection went away (nil while listening), and whether `lost` was called since.
    private let down = TSanVisibleMutex<(since: ContinuousClock.Instant?, told: Bool)>((.now, false))

    public init(
        postgres: ServicePostgres, channel: String, logger: Logger, lostAfter: Duration = defaultLostAfter,
        received: @escaping @Sendable (String) -> Void, listening: @escaping @Sendable () -> Void,
        lost: @escaping @Sendable () -> Void
    ) {
        self.postgres = postgres
        self.channel = channel
        self.logger = logger
        self.lostAfter = lostAfter
        self.received = received
        self.listening = listening
        self.lost = lost
    }

    private var troubleName: String { "listener \(channel)" }

    /// A listening connection only receives, so a peer that vanished without a word (a NAT's idle timeout,
    /// a partition) would never be noticed. Every `lostAfter / 2` it asks `SELECT 1`, given 2 s; without an
    /// answer it closes the connection, which ends the notifications and starts the reconnection.
    private func checkAlive(_ connection: PostgresConnection) async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: lostAfter / 2) } catch { return }
            do {
                try await DeadlineRace<Void>.run(
                    timeout: .seconds(2), expired: { PostgresFailure.notApplied("no answer within 2 s") },
                    work: { [logger] in _ = try await connection.query("SELECT 1", logger: logger).collect() })
            } catch {
                guard !Task.isCancelled else { return }
                logger.warning(
                    "listening connection does not answer: reconnecting",
                    metadata: ["channel": "\(channel)", "error": "\(error)"])
                try? await connection.close()
                return
            }
        }
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown { await self.listenUntilCancelled() }
    }

    private func listenUntilCancelled() async {
        var backoff: Duration = .milliseconds(100)
        var connectionID = 0
        while !Task.isCancelled {
            do {
                var configuration = try ServicePostgres.connectionConfiguration(postgres.settings)
                configuration.options.connectTimeout = .seconds(2)
                // Named, so that an operator (or a test) can tell it from the pool's connections.
                configuration.options.additionalStartupParameters = [("application_name", "yedi-listener")]
                connectionID += 1
                let connection = try await PostgresConnection.connect(
                    configuration: configuration, id: connectionID, logger: logger)
                do {
                    try await connection.listen(on: channel) { notifications in
                        let wasLost = down.withLock { state in
                            defer { state = (nil, false) }
                            return state.told
                        }
                        backoff = .milliseconds(100)
                        if wasLost {
                            logger.notice("listening again", metadata: ["channel": "\(channel)"])
                            postgres.reportTrouble(troubleName, nil)
                        }
                        listening()
                        let heartbeat = Task { await self.checkAlive(connection) }
                        defer { heartbeat.cancel() }
                        for try await notification in notifications { received(notification.payload) }
                    }
                } catch {
                    try? await connection.close()
                    throw error
                }
                try? await connection.close()
            } catch {
                if !Task.isCancelled {
                    logger.debug("not listening", metadata: ["channel": "\(channel)", "error": "\(error)"])
                }
            }
            // No timer of its own (an idle replica stays idle): the wait before the next attempt ends at
            // the moment the loss is due to be told, if that comes first.
            let untilLost = down.withLock { state -> Duration? in
                if state.since == nil { state = (.now, false) }
                return state.told ? nil : lostAfter - state.since!.duration(to: .now)
            }
            if let untilLost, untilLost <= .zero {
                down.withLock { $0.told = true }
                logger.warning(
                    "notifications lost for \(lostAfter): live delivery suspended until listening again",
                    metadata: ["channel": "\(channel)"])
                postgres.reportTrouble(troubleName, "not listening to \(channel) for \(lostAfter)")
                lost()
            }
            try? await Task.sleep(for: max(.milliseconds(1), min(backoff, untilLost ?? backoff)))
            backoff = min(backoff * 2, .seconds(1))
        }
    }
}
