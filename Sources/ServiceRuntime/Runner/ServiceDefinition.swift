import GRDB
import RPCCore

/// What makes one service different from the others: its name and defaults, its schema, and its handlers.
/// Everything else (TLS, tokens, access rules, database, peers, outbox, metrics, shutdown) is the runner's.
///
/// ```swift
/// enum ContentServiceDefinition: ServiceDefinition {
///     static let defaults = ServiceDefaults(name: "content", port: 7002, metricsPort: 9102, peers: ["account"])
///     static func migrate(_ migrator: inout DatabaseMigrator) { … }
///     static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] { … }
/// }
/// ```
public protocol ServiceDefinition: Sendable {
    static var defaults: ServiceDefaults { get }
    /// One line for `--help`.
    static var summary: String { get }
    /// The service's schema versions (GRDB migrations), applied at start after the runtime's own tables.
    static func migrate(_ migrator: inout DatabaseMigrator)
    /// The same versions on PostgreSQL (same names, same order, the runtime's own first:
    /// `RuntimePostgresSchema.migrations`), or nil for a service that runs on SQLite only so far: the
    /// runner then refuses a PostgreSQL `--database` at start.
    static var postgresMigrations: [PostgresMigration]? { get }
    /// Builds the handlers from the environment; may add background workers with `env.addBackgroundService`.
    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService]
    /// Services whose handlers do not exist yet (their methods answer UNIMPLEMENTED).
    static var placeholders: [ServiceDescriptor] { get }
    /// Whether this service issues access tokens (and so loads the signing key).
    static var issuesTokens: Bool { get }
}

extension ServiceDefinition {
    public static var placeholders: [ServiceDescriptor] { [] }
    public static var postgresMigrations: [PostgresMigration]? { nil }
    public static var issuesTokens: Bool { false }
}
