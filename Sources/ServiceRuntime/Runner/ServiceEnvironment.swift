import AccessTokens
import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import RPCCore
import ServiceLifecycle

/// Everything a service's handlers are built from. Made by `ServiceRunner` (or a test) once the database
/// is open and migrated; nothing in it needs to be set up again by a service.
public final class ServiceEnvironment: Sendable {
    public let configuration: ServiceConfiguration
    /// Labelled `yedi.<service>`; handlers log through their call's `context.logger`.
    public let logger: Logger
    /// `<data>`: the SQLite database lives here, and a service's blobs go in folders below it.
    public let dataDirectory: URL
    /// Where the service's data is: SQLite (the default) or PostgreSQL.
    public let engine: ServiceEngine
    public let peers: ServicePeers
    /// Checks access tokens locally with the public key(s), each distinct token once, refusing revoked
    /// users; what the authentication interceptor uses.
    public let tokenVerifier: CachingTokenVerifier
    /// Users whose tokens no longer count here (deleted accounts).
    public let revokedUsers: RevokedUsers
    /// Signs access tokens; only for a service whose definition `issuesTokens` (AccountService).
    public let tokenSigningKey: TokenSigningKey?
    public let clock: any WallClock
    public let ids: any IDGenerator
    /// Durable calls to peers, written in the same transaction as the change that needs them.
    public let outbox: Outbox
    /// Timed work in the service's database (`docs/platform.md`, "Scheduler"); a service registers the
    /// kinds it runs with `scheduler.handle`.
    public let scheduler: Scheduler
    /// The apps this process serves: each one's roles, limits and catalogues (`--apps`).
    public let apps: AppCatalog
    /// What page cursors are signed with (`HandlerKit.pageList`).
    public let pageCursorKey: PageCursorKey
    /// Where metrics go (Prometheus in a process, already bootstrapped before this exists).
    public let metrics: any MetricsFactory
    private let background = NIOLockedValueBox<[any Service]>([])
    private let draining = NIOLockedValueBox<[any Service]>([])
    private let revocationHooks = NIOLockedValueBox<[@Sendable (String) async -> Void]>([])
    private let userChangeHooks = NIOLockedValueBox<[@Sendable (String) async -> Void]>([])

    init(
        configuration: ServiceConfiguration,
        logger: Logger,
        engine: ServiceEngine,
        peers: ServicePeers,
        tokenVerifier: CachingTokenVerifier,
        apps: AppCatalog,
        revokedUsers: RevokedUsers,
        tokenSigningKey: TokenSigningKey?,
        clock: any WallClock,
        ids: any IDGenerator,
        outbox: Outbox,
        pageCursorKey: PageCursorKey,
        metrics: any MetricsFactory
    ) {
        self.configuration = configuration
        self.logger = logger
        self.dataDirectory = URL(fileURLWithPath: configuration.dataDirectory)
        self.engine = engine
        self.peers = peers
        self.tokenVerifier = tokenVerifier
        self.apps = apps
        self.revokedUsers = revokedUsers
        self.tokenSigningKey = tokenSigningKey
        self.clock = clock
        self.ids = ids
        self.outbox = outbox
        self.scheduler = Scheduler(clock: clock)
        self.pageCursorKey = pageCursorKey
        self.metrics = metrics
    }

    /// The SQLite database, for a definition that runs on SQLite only. One that also runs on PostgreSQL
    /// (declares `postgresMigrations`) reads `engine` instead: the runner starts it on PostgreSQL only
    /// then, so reaching here on PostgreSQL is that definition's bug, caught at start.
    public var database: ServiceDatabase {
        guard case .sqlite(let database) = engine else {
            preconditionFailure("\(configuration.name): env.database on PostgreSQL; build the store from env.engine")
        }
        return database
    }

    /// A folder below the data folder (created if missing), for a service's blobs.
    public func dataFolder(_ name: String) throws -> URL {
        let url = dataDirectory.appendingPathComponent(name, isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        try PrivateFiles.tighten(url.path, to: PrivateFiles.folderMode)
        return url
    }

    /// Runs `service` (a background worker) in the process's service group: started after the database
    /// opened, stopped gracefully (in reverse order) before it closes.
    public func addBackgroundService(_ service: any Service) {
        background.withLockedValue { $0.append(service) }
    }

    var backgroundServices: [any Service] { background.withLockedValue { $0 } }

    /// Runs `service` after the RPC server in the service group, so that on graceful shutdown it is told
    /// **before** the server starts draining: for ending long-lived calls (live streams) promptly with a
    /// status that sends clients elsewhere, instead of holding the drain until its grace period runs out.
    public func addDrainingService(_ service: any Service) {
        draining.withLockedValue { $0.append(service) }
    }

    var drainingServices: [any Service] { draining.withLockedValue { $0 } }

    /// Runs `hook` with the user's id when AccountService revokes a user here (a deleted account), before
    /// the revocation waits for the user's unary calls: for what does not end by itself, such as the
    /// user's live streams (ChatService ends them).
    public func onUserRevoked(_ hook: @escaping @Sendable (String) async -> Void) {
        revocationHooks.withLockedValue { $0.append(hook) }
    }

    func userRevoked(_ userID: String) async {
        for hook in revocationHooks.withLockedValue({ $0 }) { await hook(userID) }
    }

    /// Runs `hook` with the user's id when AccountService says a user's public fields changed
    /// (`yedi.runtime.Users/UserChanged`, hosted by every process): the process's `UserDirectory`
    /// subscribes here and forgets the user. The directory is the service's, not the environment's, so a
    /// service (or a test) picks its lookup; it only needs this process-wide way in.
    public func onUserChanged(_ hook: @escaping @Sendable (String) async -> Void) {
        userChangeHooks.withLockedValue { $0.append(hook) }
    }

    func userChanged(_ userID: String) async {
        for hook in userChangeHooks.withLockedValue({ $0 }) { await hook(userID) }
    }
}
