import Logging

/// A process's engine, opened and migrated at start (`--database`), with the runtime pieces that differ
/// by engine (revocations, the outbox and scheduler workers), and its closing after the service group has
/// stopped: the SQLite file closed, or the PostgreSQL pool's background work ended (it is the first thing
/// to run, before the migrations, and the last to stop).
struct OpenedEngine {
    let engine: ServiceEngine
    /// The PostgreSQL pool's `run()`.
    private let pool: Task<Void, Never>?

    /// What refuses a PostgreSQL start before anything is made (the data folder's log key included): a
    /// service that runs on SQLite only, and replicas without one shared `--log-key` (each would make its
    /// own `<data>/log.key`, and a page cursor signed by one replica would be refused by the next), or with
    /// an image port but no shared `--image-url-key` (the same, for signed image URLs).
    static func check<Definition: ServiceDefinition>(
        _ definition: Definition.Type, configuration: ServiceConfiguration
    ) throws(StartupError) {
        guard case .postgres = configuration.database else { return }
        guard Definition.postgresMigrations != nil else {
            throw StartupError(
                "--database: the \(configuration.name) service runs on SQLite only so far "
                    + "(docs/postgres.md, \"Which services run on PostgreSQL\")")
        }
        guard configuration.logKeyFile != nil else {
            throw StartupError(
                "--log-key: required with a PostgreSQL --database; give every replica the same key file, so that "
                    + "page cursors and log tags mean the same on each (make one with `openssl rand 32 > FILE`)")
        }
        if Definition.defaults.imagePort != nil, configuration.images?.keyFile == nil {
            throw StartupError(
                "--image-url-key: required with a PostgreSQL --database; give every replica the same key file, so "
                    + "that an image URL signed by one is served by the others (make one with `openssl rand 32 > FILE`)"
            )
        }
    }

    static func open<Definition: ServiceDefinition>(
        _ definition: Definition.Type, configuration: ServiceConfiguration, logger: Logger
    ) async throws -> OpenedEngine {
        try check(definition, configuration: configuration)
        switch configuration.database {
        case .sqlite:
            let database = try ServiceDatabase.open(
                directory: configuration.dataDirectory, name: configuration.name, migrations: Definition.migrate,
                logger: logger)
            return OpenedEngine(engine: .sqlite(database), pool: nil)
        case .postgres(let settings):
            let migrations = Definition.postgresMigrations ?? []
            let postgres = try ServicePostgres(settings: settings, logger: logger)
            let pool = Task { await postgres.run() }
            do {
                try await postgres.waitUntilReachable()
                try await PostgresMigrator.migrate(postgres, service: configuration.name, migrations: migrations)
            } catch {
                pool.cancel()
                await pool.value
                throw error
            }
            return OpenedEngine(engine: .postgres(postgres), pool: pool)
        }
    }

    func revokedUsers(clock: any WallClock) async throws -> RevokedUsers {
        switch engine {
        case .sqlite(let database): try await RevokedUsers(database: database, clock: clock)
        case .postgres(let postgres): try await RevokedUsers(postgres: postgres, clock: clock)
        }
    }

    /// On PostgreSQL, every replica runs one; leases named after `--replica` keep a job to one of them.
    func outboxWorker(
        outbox: Outbox, peers: ServicePeers, logger: Logger, configuration: ServiceConfiguration
    ) -> OutboxWorker {
        switch engine {
        case .sqlite(let database):
            OutboxWorker(database: database, outbox: outbox, peers: peers, logger: logger, settings: .init())
        case .postgres(let postgres):
            OutboxWorker(
                postgres: postgres, outbox: outbox, peers: peers, logger: logger, settings: .init(),
                replica: configuration.replica)
        }
    }

    func schedulerWorker(scheduler: Scheduler, logger: Logger) -> SchedulerWorker {
        switch engine {
        case .sqlite(let database): SchedulerWorker(database: database, scheduler: scheduler, logger: logger)
        case .postgres(let postgres): SchedulerWorker(postgres: postgres, scheduler: scheduler, logger: logger)
        }
    }

    func close() async {
        switch engine {
        case .sqlite(let database): try? database.close()
        case .postgres: break
        }
        pool?.cancel()
        await pool?.value
    }
}
