import Foundation
import Logging
import PostgresNIO

extension ServicePostgres {
    /// At start: connects once directly (not through the pool, whose waiting calls hide the reason) until
    /// it works or `--database-connect-timeout` passes, logging each reason. A wrong password, a missing
    /// database or privilege, a TLS mismatch or `too many connections` fail at once: waiting cannot fix
    /// them. The error is one line naming the address and the reason.
    public func waitUntilReachable() async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + settings.connectTimeout
        let configuration = try Self.connectionConfiguration(settings)
        var attempt = 0
        while true {
            attempt += 1
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: configuration, id: attempt, logger: logger)
                defer { Task { try? await connection.close() } }
                try await connection.query("SELECT 1", logger: logger)
                logger.info("database reachable", metadata: ["database": "\(settings.displayAddress)"])
                return
            } catch {
                let reason = Self.startupReason(error)
                if Self.isPermanent(error) {
                    throw StartupError("PostgreSQL \(settings.displayAddress): \(reason)")
                }
                guard clock.now < deadline else {
                    throw StartupError(
                        "PostgreSQL \(settings.displayAddress) not reachable within "
                            + "\(Self.seconds(settings.connectTimeout)): \(reason)")
                }
                logger.warning(
                    "database not reachable yet; trying again",
                    metadata: ["database": "\(settings.displayAddress)", "reason": "\(reason)"])
                try await Task.sleep(for: .milliseconds(500))
            }
        }
    }

    /// Failures that a retry cannot fix.
    static func isPermanent(_ error: any Error) -> Bool {
        if let error = error as? PSQLError {
            switch error.code {
            case .server:
                // 28000/28P01: authentication; 3D000: no such database; 42501: no privilege; 53300: too many
                // connections (the budget is wrong, not the moment).
                return ["28000", "28P01", "3D000", "42501", "53300"].contains(error.serverInfo?[.sqlState] ?? "")
            case .sslUnsupported, .failedToAddSSLHandler, .unsupportedAuthMechanism, .authMechanismRequiresPassword,
                .saslError:
                return true
            case .connectionError:
                // TLS failures arrive as connection errors with NIOSSL's error underneath.
                return error.underlying is NIOSSLError
            default:
                return false
            }
        }
        return error is NIOSSLError
    }

    /// The server's own message where it sent one (it names no secret), else the error's kind.
    static func startupReason(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if error.code == .server {
                let state = error.serverInfo?[.sqlState] ?? "?"
                return "\(error.serverInfo?[.message] ?? "server error") (SQLSTATE \(state))"
            }
            if let underlying = error.underlying { return "\(error.code): \(underlying)" }
            return "\(error.code)"
        }
        return "\(error)"
    }

    public static func connectionConfiguration(_ settings: PostgresSettings) throws -> PostgresConnection.Configuration
    {
        let password = try settings.readPassword()
        switch settings.address {
        case .unixSocket:
            return PostgresConnection.Configuration(
                unixSocketPath: settings.address.socketPath!, username: settings.role, password: password,
                database: settings.database)
        case .tcp(let host, let port):
            var configuration = PostgresConnection.Configuration(
                host: host, port: port, username: settings.role, password: password, database: settings.database,
                tls: .disable)
            if settings.tls == .verifyFull {
                configuration.tls = .require(try NIOSSLContext(configuration: tlsConfiguration(settings)))
                configuration.options.tlsServerName = host
            }
            configuration.options.connectTimeout = .seconds(10)
            return configuration
        }
    }
}
