import PostgresNIO
import RPCCore

/// A constraint the transaction broke (SQLSTATE class 23), told apart by the constraint's name, never by
/// the message's text: a store catches the one it expects (`reservation_idempotency`, a primary key) and
/// answers it as its protocol says.
public struct PostgresConstraintViolation: Error, Sendable, Equatable, CustomStringConvertible {
    /// `23505` unique, `23503` foreign key, `23514` check, `23502` not null, `23P01` exclusion.
    public var sqlState: String
    /// The constraint's (or unique index's) name; empty when the server named none (not null).
    public var constraint: String
    public var table: String

    public var isUniqueViolation: Bool { sqlState == "23505" }

    public var description: String { "constraint \(constraint) on \(table) violated (SQLSTATE \(sqlState))" }
}

/// How a PostgreSQL error reaches a caller.
enum PostgresFailure {
    /// Serialization failure and deadlock: the whole transaction may run again.
    static func isRetryable(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, error.code == .server else { return false }
        return ["40001", "40P01"].contains(error.serverInfo?[.sqlState] ?? "")
    }

    static func sqlState(_ error: any Error) -> String? {
        guard let error = error as? PSQLError, error.code == .server else { return nil }
        return error.serverInfo?[.sqlState]
    }

    /// The constraint violation, if `error` is one.
    static func constraintViolation(_ error: any Error) -> PostgresConstraintViolation? {
        guard let error = error as? PSQLError, error.code == .server, let state = error.serverInfo?[.sqlState],
            state.hasPrefix("23")
        else { return nil }
        return PostgresConstraintViolation(
            sqlState: state, constraint: error.serverInfo?[.constraintName] ?? "",
            table: error.serverInfo?[.tableName] ?? "")
    }

    /// The database could not be reached or went away: the connection broke, the server is shutting
    /// down or refuses connections now, the statement was cancelled. Not a bug of ours; try again.
    static func isUnavailable(_ error: any Error) -> Bool {
        if let error = error as? PSQLError {
            switch error.code {
            case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed,
                .queryCancelled, .sslUnsupported, .failedToAddSSLHandler:
                return true
            case .server:
                let state = error.serverInfo?[.sqlState] ?? ""
                // 08: connection exception; 57P01-03: shutdown, crash recovery, cannot connect now; 57014:
                // statement cancelled; 53300: too many connections; 55P03: lock not available.
                return state.hasPrefix("08") || ["57P01", "57P02", "57P03", "57014", "53300", "55P03"].contains(state)
            default:
                return false
            }
        }
        return error is ChannelError || error is IOError
    }

    /// The connection was closed (by the server, a terminated backend, or the client) before or while
    /// the statement was sent.
    static func isClosedConnection(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return false }
        return [.serverClosedConnection, .clientClosedConnection, .uncleanShutdown].contains(error.code)
    }

    /// Why, in a few words, for an `UNAVAILABLE` message (never a statement's text or its values).
    static func reason(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if error.code == .server {
                return "SQLSTATE \(error.serverInfo?[.sqlState] ?? "?")"
            }
            return "\(error.code)"
        }
        return "\(type(of: error))"
    }

    static func notApplied(_ why: String) -> RPCError {
        RPCError(code: .unavailable, message: "the database is unavailable (\(why)); nothing was applied: try again")
    }

    static func outcomeUnknown(_ why: String) -> RPCError {
        RPCError(
            code: .unavailable,
            message: "the database connection failed during COMMIT (\(why)): the outcome is unknown: retry with the "
                + "same idempotency key or client message id")
    }
}
