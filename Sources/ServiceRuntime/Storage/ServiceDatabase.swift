import Foundation
import GRDB
import Logging
import RPCCore

/// A service's own SQLite database: `<data>/<service>.sqlite`, opened once per process.
///
/// - WAL mode (a `DatabasePool`): readers never wait for the writer, and the one writer queue
///   serialises writes.
/// - `synchronous = FULL`: every commit fsyncs the WAL before the write returns, so a change an RPC
///   answered OK for survives a `SIGKILL` (that alone needs no fsync: the bytes are in the kernel) **and
///   a power loss or kernel crash**. `NORMAL` would save one fsync per commit and could lose the last
///   commits on power loss; a reservation that was confirmed must not vanish, so we pay it.
/// - Foreign keys on; a 5 s busy timeout for the rare lock held by another process (a backup, sqlite3).
/// - The file is read through a memory map (`mmap_size`, up to `mappedBytes`): a page outside a
///   connection's own page cache costs a memory read instead of a `pread` system call and a copy (those
///   were 14 % of AccountService's CPU in SLP's SearchNearby bench, docs/slp.md). Writes still go through
///   the WAL as before.
/// - All work runs on GRDB's own dispatch queues, never on the NIO event loop the handler was called on.
///
/// Only a service's store (its SQL layer, behind a protocol of its own) uses this type and GRDB's;
/// handlers see the store protocol, so a second engine (PostgreSQL) can replace the store.
public final class ServiceDatabase: Sendable {
    /// The most of the database file each connection reads through a memory map (256 MiB).
    public static let mappedBytes = 256 * 1_024 * 1_024

    /// GRDB's pool, for the store's records and SQL.
    public let pool: DatabasePool
    public let path: String

    /// Opens (creating if needed) and migrates the database in `directory`.
    ///
    /// - Parameter migrations: the service's schema versions, registered after the runtime's own
    ///   (the outbox and the receipt ledger).
    public static func open(
        directory: String,
        name: String,
        migrations: (inout DatabaseMigrator) -> Void,
        logger: Logger
    ) throws -> ServiceDatabase {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try PrivateFiles.tighten(directory, to: PrivateFiles.folderMode)
        let path = URL(fileURLWithPath: directory).appendingPathComponent("\(name).sqlite").path
        try PrivateFiles.createDatabaseFile(path)
        for file in PrivateFiles.databaseFiles(path) { try PrivateFiles.tighten(file, to: PrivateFiles.fileMode) }
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(5)
        configuration.label = "yedi.\(name).db"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA mmap_size = \(mappedBytes)")
        }
        let pool = try DatabasePool(path: path, configuration: configuration)
        var migrator = DatabaseMigrator()
        RuntimeSchema.register(in: &migrator)
        migrations(&migrator)
        try migrator.migrate(pool)
        for file in PrivateFiles.databaseFiles(path) { try PrivateFiles.tighten(file, to: PrivateFiles.fileMode) }
        logger.info("database ready", metadata: ["path": "\(path)"])
        return ServiceDatabase(pool: pool, path: path)
    }

    private init(pool: DatabasePool, path: String) {
        self.pool = pool
        self.path = path
    }

    /// Runs `updates` in one write transaction: all of it commits (durably) before this returns, or none.
    public func write<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.write(updates)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED
        {
            throw RPCError(code: .unavailable, message: "the database is busy; try again")
        }
    }

    /// Runs `value` on a read-only snapshot.
    public func read<T: Sendable>(_ value: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.read(value)
    }

    /// `PRAGMA integrity_check`: "ok", or what SQLite found wrong.
    public func integrityCheck() async throws -> String {
        try await pool.read { db in
            try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "\n")
        }
    }

    /// Checkpoints the WAL and closes every connection; the process calls it after its services stopped.
    public func close() throws {
        try pool.close()
    }
}

extension ServiceDatabase {
    /// `?,?,…` for an `IN (…)` list of `count` bound values (one statement whatever the count, up to
    /// SQLite's bound-variable limit; callers batch at 100).
    public static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ",")
    }
}
