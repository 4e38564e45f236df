import PostgresNIO

/// One version of a service's PostgreSQL schema: the same name, in the same place of the list, as its
/// SQLite sibling (a `DatabaseMigrator` entry), so that both engines' versions move in step.
public struct PostgresMigration: Sendable {
    public var name: String
    /// Run in order in one transaction; one statement each (the extended protocol takes no lists).
    public var statements: [String]

    public init(_ name: String, _ statements: [String]) {
        self.name = name
        self.statements = statements
    }
}

/// Brings a service's PostgreSQL database to the binary's newest version (docs/postgres.md,
/// "Migrations"). Each version runs in its own transaction under `pg_advisory_xact_lock` on the
/// service's key, so replicas started at once on an empty database migrate it once: the others wait for
/// the lock, then find the version recorded. The versions applied are kept in
/// `runtime_schema_migrations`, in order. A database with a version the binary does not know (a newer
/// binary ran against it), or with different versions in its history, refuses the start, naming both.
public enum PostgresMigrator {
    /// Long enough for an index over a large table; start-up waits for it.
    static let timeout: Duration = .seconds(600)

    public static func migrate(
        _ postgres: ServicePostgres,
        service: String,
        migrations: [PostgresMigration]
    ) async throws {
        var names = Set<String>()
        for migration in migrations where !names.insert(migration.name).inserted || migration.name.isEmpty {
            throw StartupError("migration \"\(migration.name)\" of \(service) is listed twice or has no name")
        }
        let lockKey = "yedi.migrate." + service
        for (index, migration) in migrations.enumerated() {
            try await postgres.write(timeout: timeout) { tx in
                // A version may build indexes for minutes: its statements get the migration's deadline,
                // not a store call's (the session's `statement_timeout`).
                let limit = "\(timeout.wholeMilliseconds)"
                try await tx.query("SELECT set_config('statement_timeout', \(limit), true)")
                try await tx.query("SELECT pg_advisory_xact_lock(hashtextextended(\(lockKey), 0))")
                try await tx.query(
                    """
                    CREATE TABLE IF NOT EXISTS runtime_schema_migrations (
                        position integer PRIMARY KEY,
                        name text NOT NULL UNIQUE
                    )
                    """)
                let applied = try await Self.applied(tx)
                try Self.check(applied, against: migrations, service: service, database: postgres.settings)
                guard applied.count <= index else { return }
                for statement in migration.statements {
                    do {
                        try await tx.query(PostgresQuery(unsafeSQL: statement))
                    } catch let error as PSQLError where error.code == .server {
                        throw StartupError(
                            "migration \"\(migration.name)\" of \(service) failed: "
                                + "\(error.serverInfo?[.message] ?? "server error") "
                                + "(SQLSTATE \(error.serverInfo?[.sqlState] ?? "?"))")
                    }
                }
                try await tx.query(
                    "INSERT INTO runtime_schema_migrations (position, name) VALUES (\(index + 1), \(migration.name))")
                postgres.logger.info(
                    "database migrated", metadata: ["service": "\(service)", "version": "\(migration.name)"])
            }
        }
        // An empty list still checks the database against the binary.
        if migrations.isEmpty {
            try await postgres.snapshot { tx in
                let exists = try await tx.query("SELECT to_regclass('runtime_schema_migrations') IS NOT NULL")
                guard try exists.first?.decode(Bool.self) == true else { return }
                try Self.check(try await Self.applied(tx), against: [], service: service, database: postgres.settings)
            }
        }
    }

    /// The versions recorded, in order.
    static func applied(_ tx: PostgresTransaction) async throws -> [String] {
        try await tx.query("SELECT name FROM runtime_schema_migrations ORDER BY position").map {
            try $0.decode(String.self)
        }
    }

    /// The database's history must be a beginning of the binary's list.
    static func check(
        _ applied: [String],
        against migrations: [PostgresMigration],
        service: String,
        database: PostgresSettings
    ) throws {
        let known = migrations.map(\.name)
        let binaryNewest = known.last.map { "\"\($0)\" (\(known.count))" } ?? "none"
        for (position, name) in applied.enumerated() {
            guard position < known.count else {
                throw StartupError(
                    "PostgreSQL \(database.displayAddress): the schema of \(service) is at version \"\(applied.last!)\" "
                        + "(\(applied.count)), which this binary does not know; its newest is \(binaryNewest): run "
                        + "the newer binary")
            }
            guard known[position] == name else {
                throw StartupError(
                    "PostgreSQL \(database.displayAddress): the schema of \(service) has version \"\(name)\" at "
                        + "\(position + 1), where this binary has \"\(known[position])\"; its newest is "
                        + "\(binaryNewest): the database was migrated by another branch")
            }
        }
    }
}
