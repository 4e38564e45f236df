import Foundation
import Logging
import PostgresNIO
import ServiceRuntime

extension DataScan {
    /// Every column of every table of a service's PostgreSQL database that holds `needle`: text-like
    /// columns as text, `bytea` (image bytes) as bytes.
    static func find(_ needle: String, inPostgres settings: PostgresSettings) async throws -> [Finding] {
        try await connected(to: settings) { connection, logger in
            try await find(needle, on: connection, database: settings.database, logger: logger)
        }
    }

    /// How many rows `table` has (a name from the test, never from input).
    static func rowCount(_ table: String, inPostgres settings: PostgresSettings) async throws -> Int {
        try await connected(to: settings) { connection, logger in
            let rows = try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(quoted(table))"), logger: logger)
            for try await count in rows.decode(Int.self) { return count }
            return 0
        }
    }

    private static func connected<T>(
        to settings: PostgresSettings, _ body: (PostgresConnection, Logger) async throws -> T
    ) async throws -> T {
        let logger = Logger(label: "yedi.e2e.scan")
        let connection = try await PostgresConnection.connect(
            configuration: ServicePostgres.connectionConfiguration(settings), id: 1, logger: logger)
        do {
            let result = try await body(connection, logger)
            try await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }

    private static func find(
        _ needle: String, on connection: PostgresConnection, database: String, logger: Logger
    ) async throws -> [Finding] {
        var columns: [(table: String, column: String, type: String)] = []
        let rows = try await connection.query(
            """
            SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c
            JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
            WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
            ORDER BY c.table_name, c.ordinal_position
            """, logger: logger)
        for try await (table, column, type) in rows.decode((String, String, String).self) {
            columns.append((table, column, type))
        }
        var findings: [Finding] = []
        for (table, column, type) in columns {
            let (quotedTable, quotedColumn) = (quoted(table), quoted(column))
            let condition =
                type == "bytea"
                ? "position(convert_to($1, 'UTF8') in \(quotedColumn)) > 0"
                : "strpos(CAST(\(quotedColumn) AS text), $1) > 0"
            var bindings = PostgresBindings()
            bindings.append(needle)
            let counted = try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(quotedTable) WHERE \(condition)", binds: bindings),
                logger: logger)
            for try await count in counted.decode(Int.self) where count > 0 {
                findings.append(Finding(place: "\(database): \(table).\(column) (\(count) rows)"))
            }
        }
        return findings
    }

    /// An identifier as PostgreSQL quotes it (the names come from the catalogue, not from input).
    private static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
