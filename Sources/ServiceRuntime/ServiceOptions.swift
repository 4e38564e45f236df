import ArgumentParser
import Logging

/// The command-line options every Yedi service process shares.
public struct ServiceOptions: ParsableArguments {
    @Option(help: "Address to listen on.")
    public var host = "127.0.0.1"

    @Option(help: "RPC port (TLS).")
    public var port: Int

    @Option(name: .customLong("metrics-port"), help: "Plain-HTTP port for /metrics and /healthz (loopback only).")
    public var metricsPort: Int

    @Option(
        name: .customLong("pki"), help: "Directory of the PKI made by deploy/dev-pki.sh (ca.pem, <service>.pem/.key).")
    public var pkiDirectory = "deploy/pki"

    @Option(name: .customLong("data"), help: "Directory this service keeps its database and blobs in.")
    public var dataDirectory: String

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    public var logLevelName = "info"

    @Option(name: .customLong("shutdown-grace"), help: "Seconds calls in flight get to finish on SIGTERM/SIGINT.")
    public var shutdownGraceSeconds = 10.0

    public init() {}

    public var logLevel: Logger.Level { Logger.Level(rawValue: logLevelName) ?? .info }

    public func validate() throws {
        guard Logger.Level(rawValue: logLevelName) != nil else {
            throw ValidationError("unknown log level \"\(logLevelName)\"")
        }
    }
}
