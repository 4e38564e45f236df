import PostgresNIO

/// A statement run so often that parsing and planning it again each time shows (a chat send, a stream's
/// read): `PostgresTransaction.execute` prepares it once per pooled connection, under a name made from its
/// SQL, and executes it by name after that. Its SQL is fixed text with `$1`, `$2`, … for the values.
///
/// Keep such statements free of `*` over a table (over `unnest` or a subquery it is fixed): a prepared
/// plan must not change its result columns, and a later migration adding a column to the table would
/// otherwise break it on connections that prepared it before.
public protocol HotStatement {
    static var sql: String { get }
    /// The type of each parameter, `$1` first. Declared, not inferred from the first call's values: a
    /// connection keeps the types it prepared with, and a later call binding another type (an `Int` where
    /// an `Int32` was, a NULL first) would send bytes the server reads as something else. Every call's
    /// values are checked against these.
    static var parameters: [PostgresDataType] { get }
}

/// A call bound values that do not match its statement's declared parameters: a programming error, caught
/// before anything reaches the database.
public struct HotStatementMismatch: Error, CustomStringConvertible {
    public let description: String
}

/// postgres-nio's form of a prepared statement, for any `HotStatement` and any values.
struct PreparedHotStatement<Statement: HotStatement>: PostgresPreparedStatement {
    /// From the SQL and the declared types, never the type's name: PostgreSQL cuts names at 63 bytes, and
    /// two statements cut to one name would run each other's SQL.
    static var name: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for byte in (Statement.sql + Statement.parameters.map { "\($0.rawValue)" }.joined(separator: ",")).utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return "yedi_hot_" + String(hash, radix: 16)
    }
    static var sql: String { Statement.sql }
    static var bindingDataTypes: [PostgresDataType] { Statement.parameters }
    typealias Row = PostgresRow

    let bindings: PostgresBindings

    func makeBindings() -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
}

extension PostgresTransaction {
    /// Runs `statement` with `values` bound to `$1`, `$2`, … in order (nil binds NULL), prepared on this
    /// transaction's connection at its first use there; collects its rows.
    @discardableResult
    public func execute<Statement: HotStatement>(
        _ statement: Statement.Type, _ values: (any PostgresThrowingDynamicTypeEncodable)?...
    ) async throws -> [PostgresRow] {
        try await connection.execute(statement, values, logger: logger)
    }
}

extension PostgresConnection {
    /// `PostgresTransaction.execute` for a statement outside a transaction.
    @discardableResult
    public func execute<Statement: HotStatement>(
        _ statement: Statement.Type, _ values: (any PostgresThrowingDynamicTypeEncodable)?..., logger: Logger
    ) async throws -> [PostgresRow] {
        try await execute(statement, values, logger: logger)
    }

    fileprivate func execute<Statement: HotStatement>(
        _ statement: Statement.Type, _ values: [(any PostgresThrowingDynamicTypeEncodable)?], logger: Logger
    ) async throws -> [PostgresRow] {
        let types = Statement.parameters
        guard values.count == types.count else {
            throw HotStatementMismatch(
                description: "\(Statement.self) takes \(types.count) values, not \(values.count)")
        }
        var bindings = PostgresBindings(capacity: values.count)
        for (index, value) in values.enumerated() {
            guard let value else {
                bindings.appendNull()
                continue
            }
            guard value.psqlType == types[index] else {
                throw HotStatementMismatch(
                    description: "\(Statement.self): $\(index + 1) is \(types[index]), not \(value.psqlType)")
            }
            try bindings.append(value)
        }
        do {
            var rows: [PostgresRow] = []
            for try await row in try await execute(PreparedHotStatement<Statement>(bindings: bindings), logger: logger)
            {
                rows.append(row)
            }
            return rows
        } catch {
            // postgres-nio keeps a failed preparation's error for the statement's name on the connection,
            // for good: a parse that timed out behind a migration's lock, or hit a deadlock, would fail
            // that statement on this connection forever. It cannot tell a failed preparation from a failed
            // execution, so any failure but a constraint violation (the expected outcome of a conflicting
            // insert) closes the connection; the pool opens another, and the server rolls back what the
            // connection's transaction had done.
            if PostgresFailure.constraintViolation(error) == nil { try? await close() }
            throw error
        }
    }
}
