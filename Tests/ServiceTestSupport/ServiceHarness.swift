import AccessTokens
import Foundation
import Logging
import NIOCore
import NIOPosix
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime

/// Starts services in this test process the way their executables run them (real TLS, real database,
/// the runner's interceptors and access rules), each with a temporary data folder, on the throwaway
/// `TestPKI` (its dev-PKI script also makes the token signing key).
public struct ServiceHarness: Sendable {
    public let pki: TestPKI
    /// Removed with the test process's temporary files.
    public let dataRoot: URL

    public init() throws {
        pki = try TestPKI.get()
        dataRoot = pki.root.appendingPathComponent("data-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dataRoot, withIntermediateDirectories: true)
    }

    /// The signing key `deploy/dev-pki.sh` made for the test PKI.
    public var tokenSigningKeyFile: String { pki.devPKI.appendingPathComponent("token-signing.key").path }

    /// A configuration for `defaults`' service on free ports, its data under `dataRoot/<name>`, peers on
    /// loopback at `peers` (name → port).
    public func configuration(
        _ defaults: ServiceDefaults,
        port: Int = 0,
        peers: [String: Int] = [:],
        dataDirectory: String? = nil,
        configure: (inout ServiceOptions) -> Void = { _ in }
    ) throws -> ServiceConfiguration {
        var options = try ServiceOptions.parse([])
        options.port = "\(port)"
        options.metricsPort = "0"
        options.imagePort = "0"
        options.pki = pki.devPKI.path
        options.data = dataDirectory ?? dataRoot.appendingPathComponent(defaults.name).path
        options.logLevel = "warning"
        options.shutdownGrace = "1"
        options.peers = peers.sorted { $0.key < $1.key }.map { "\($0.key)=127.0.0.1:\($0.value)" }
        // Tests sign up many users over one loopback connection on a clock that stands still; the
        // tests of the limits set their own.
        options.signInRatePerAddress = "1000000/60"
        options.signInRatePerConnection = "1000000/60"
        configure(&options)
        return try ServiceConfiguration.resolve(options: options, environment: [:], defaults: defaults)
    }

    /// Starts `definition` with `configuration`.
    public func start<Definition: ServiceDefinition>(
        _ definition: Definition.Type,
        configuration: ServiceConfiguration,
        clock: any WallClock = SystemClock(),
        ids: (any IDGenerator)? = nil,
        logger: Logger? = nil
    ) async throws -> RunningService {
        var logger = logger ?? Logger(label: "test.\(configuration.name)")
        logger.logLevel = .warning
        return try await ServiceRunner.start(
            definition, configuration: configuration, clock: clock, ids: ids, logger: logger)
    }

    /// An access token for `user`, signed with the test PKI's key, valid from `now` for `lifetime`.
    public func token(
        user: String,
        role: UserRole,
        app: AppID = .yedi,
        sessionID: String? = nil,
        now: Date = Date(),
        lifetime: Duration = .seconds(900)
    ) throws -> String {
        let issuer = AccessTokenIssuer(
            signingKey: try TokenSigningKey.load(pemFile: tokenSigningKeyFile), lifetime: lifetime, now: { now })
        return try issuer.issue(userID: user, role: role, sessionID: sessionID ?? "s-\(user)", app: app).token
    }

    /// A client of loopback `port`, trusting the test CA, presenting `identity`'s certificate if given
    /// (a service name, or "yedi-probe").
    public func clientConfiguration(port: Int, identity: String? = nil) -> ClientConfiguration {
        pki.rpcClientConfiguration(ports: [port], identity: identity) { $0.maxAttempts = 1 }
    }

    /// `authorization: Bearer <token>` call options.
    public static func bearer(_ token: String, timeout: Duration = .seconds(10)) -> CallOptions {
        CallOptions(timeout: timeout, metadata: ["authorization": "Bearer \(token)"])
    }

    /// A loopback port nothing listens on (bound, then released), for a service process to bind.
    ///
    /// Taken below the kernel's ephemeral range (`ip_local_port_range`): a port the kernel handed out for
    /// `bind(0)` and took back could be given to any process's next outgoing connection before the
    /// service binds it, and was (a test's metrics port, "already in use", while another test class ran).
    /// Each port is handed out once per test process (two asked for at once must differ); another test
    /// process draws from the same range at a random place, and a port it holds fails the bind here.
    public static func unusedPort() throws -> Int {
        let range = PortRange.belowEphemeral
        for _ in 0..<200 {
            let port = PortRange.next.withLock { next -> Int in
                defer { next += 1 }
                return range.lowerBound + next % range.count
            }
            guard
                let channel = try? ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .bind(host: "127.0.0.1", port: port).wait()
            else { continue }
            try channel.close().wait()
            return port
        }
        throw IOError(errnoCode: EADDRINUSE, reason: "no free loopback port in \(range)")
    }
}

/// Where `ServiceHarness.unusedPort` takes ports from: 12,000 ports ending 1,000 below the kernel's
/// ephemeral range (Linux: 32768–60999), or 20000..<32000 when that range starts too low to leave room.
private enum PortRange {
    static let belowEphemeral: Range<Int> = {
        let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
        let low = text.flatMap { Int($0.split(whereSeparator: \.isWhitespace).first ?? "") } ?? 32_768
        let end = low - 1_000
        return end >= 13_024 ? (end - 12_000)..<end : 20_000..<32_000
    }()

    /// The next offset into the range: starts at a random place, so parallel test processes rarely meet.
    static let next = LockedValue(Int.random(in: 0..<12_000))
}
