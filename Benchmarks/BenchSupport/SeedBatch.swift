import Foundation
import GRDB
import Logging
import PostgresNIO
import ServiceRuntime

/// The rows a bench seeds, written once for both engines: statements with `?` placeholders and text or
/// integer values, applied in one transaction to the service's SQLite file or to its PostgreSQL
/// database (where each `?` becomes `$n`), after checking that the service migrated that database to
/// `version` first.
public struct SeedBatch: Sendable {
    public enum Value: Sendable {
        case text(String)
        case integer(Int64)
    }

    /// The schema version the statements were written for (`booking-1`, `account-1`).
    public let version: String
    public private(set) var statements: [(sql: String, values: [Value])] = []

    public init(version: String) { self.version = version }

    public mutating func add(_ sql: String, _ values: [Value]) { statements.append((sql, values)) }

    public func apply(toSQLite path: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            guard
                try Bool.fetchOne(
                    db, sql: "SELECT COUNT(*) > 0 FROM grdb_migrations WHERE identifier = ?", arguments: [version])
                    == true
            else { throw BenchError("the service's database has no \(version) schema") }
            for (sql, values) in statements {
                try db.execute(
                    sql: sql,
                    arguments: StatementArguments(
                        values.map { value -> any DatabaseValueConvertible in
                            switch value {
                            case .text(let text): text
                            case .integer(let integer): integer
                            }
                        }))
            }
        }
    }

    public func apply(to postgres: BenchPostgres) async throws {
        let connection = try await postgres.connect()
        do {
            let migrated = try await connection.query(
                "SELECT count(*) FROM runtime_schema_migrations WHERE name = \(version)", logger: BenchPostgres.logger
            ).collect().first?.decode(Int64.self)
            guard migrated == 1 else { throw BenchError("the service's database has no \(version) schema") }
            try await connection.query("BEGIN", logger: BenchPostgres.logger)
            for (sql, values) in statements {
                var bindings = PostgresBindings()
                var numbered = ""
                var next = 0
                for character in sql {
                    guard character == "?" else {
                        numbered.append(character)
                        continue
                    }
                    next += 1
                    numbered += "$\(next)"
                }
                for value in values {
                    switch value {
                    case .text(let text): bindings.append(text)
                    case .integer(let integer): bindings.append(integer)
                    }
                }
                try await connection.query(
                    PostgresQuery(unsafeSQL: numbered, binds: bindings), logger: BenchPostgres.logger)
            }
            try await connection.query("COMMIT", logger: BenchPostgres.logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }
}
