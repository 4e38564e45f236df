import Foundation
import Logging
import RPCCore

/// A service process's settings, checked: what `ServiceOptions` and the environment said, over the
/// service's defaults.
public struct ServiceConfiguration: Sendable {
    public var name: String
    public var host: String
    /// 0 lets the system choose (tests).
    public var port: Int
    public var metricsPort: Int
    public var dataDirectory: String
    public var certificateFile: String
    public var privateKeyFile: String
    public var caFile: String
    public var tokenPublicKeyFiles: [String]
    /// Only the token issuer (AccountService) loads it.
    public var tokenSigningKeyFile: String
    /// The key of the user tags in logs (`LogKey`); nil: `<data>/log.key`.
    public var logKeyFile: String?
    /// Peer service name → its addresses.
    public var peers: [String: [ClientConfiguration.Target]]
    public var imageCacheItems: Int
    public var textCacheItems: Int
    public var maxFrameBytes: Int
    /// Token buckets for the costly anonymous calls (`ClientRateLimits`), per client address and per
    /// connection.
    public var signInRatePerAddress: RateLimit
    public var signInRatePerConnection: RateLimit
    public var logLevel: Logger.Level
    public var shutdownGrace: Duration
    /// Development-only features may be on (`--development`); never in production.
    public var development: Bool
    /// The clock may be moved forward (`--dev-clock`); only in development mode.
    public var devClock: Bool
    /// Per-user limits (`--quota NAME=LIMIT`).
    public var quotas: QuotaLimits = .defaults
    /// How long deletable rows are kept (`--retention NAME=HOURS`).
    public var retention: RetentionPeriods = .defaults
    /// The folder of the apps served (`--apps FOLDER`), read at start (`AppCatalog.load`); nil: YeDi
    /// alone.
    public var appsFolder: String? = nil
    /// The real mail, SMS and push providers configured (`--mail-api-url` & co.); none: development files.
    public var senders: OutsideSenderSettings = .development
    /// The payment gateway (`--payment-api-url` & co.); none: the development provider.
    public var payments: PaymentSettings = .development
    /// The image port and its URLs (`--image-port` & co.); nil for a service that serves no images.
    public var images: ImageServerSettings? = nil
    /// SQLite (default) or PostgreSQL (`--database` & co., docs/postgres.md).
    public var database: DatabaseSettings = .sqlite
    /// This process's name among its service's replicas (`--replica`; default `host:port`).
    public var replica: String = ""

    /// Reads `options` over `environment` (`YEDI_…` variables) over `defaults`; throws a
    /// `ConfigurationError` naming the first bad option.
    public static func resolve(
        options: ServiceOptions,
        environment: [String: String],
        defaults: ServiceDefaults
    ) throws(ConfigurationError) -> ServiceConfiguration {
        let reader = OptionReader(environment: environment)
        let pki = reader.text(options.pki, flag: "pki", default: "deploy/pki")
        func inPKI(_ file: String) -> String { URL(fileURLWithPath: pki).appendingPathComponent(file).path }

        let host = reader.text(options.host, flag: "host", default: "127.0.0.1")
        guard !host.isEmpty else { throw reader.error("host", "must not be empty") }
        var peers: [String: [ClientConfiguration.Target]] = [:]
        for name in defaults.peers {
            guard let port = ServiceDefaults.developmentPorts[name] else { continue }
            peers[name] = [ClientConfiguration.Target(host: "127.0.0.1", port: port)]
        }
        let peerEntries =
            options.peers.isEmpty
            ? (environment["YEDI_PEERS"] ?? "").split(whereSeparator: { $0 == " " || $0 == ";" }).map(String.init)
            : options.peers
        for entry in peerEntries {
            let (name, targets) = try parsePeer(entry, reader: reader)
            peers[name] = targets
        }

        let tokenKeys = reader.text(
            options.tokenPublicKeys, flag: "token-public-keys", default: inPKI("token-signing.pub.pem"))
        let tokenKeyFiles = tokenKeys.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard !tokenKeyFiles.isEmpty, !tokenKeyFiles.contains("") else {
            throw reader.error("token-public-keys", "give one or more key files, separated by commas")
        }

        let levelName = reader.text(options.logLevel, flag: "log-level", default: "info")
        guard let level = Logger.Level(rawValue: levelName) else {
            throw reader.error(
                "log-level", "\"\(levelName)\" is not one of trace, debug, info, notice, warning, error, critical")
        }
        let grace = try reader.number(
            options.shutdownGrace, flag: "shutdown-grace", default: 10, range: 0...3_600, as: Double.self)

        let devClockFromEnvironment = try reader.boolean(environment["YEDI_DEV_CLOCK"], flag: "dev-clock")
        let devClock = options.devClock || devClockFromEnvironment
        let developmentFromEnvironment = try reader.boolean(environment["YEDI_DEVELOPMENT"], flag: "development")
        let development = options.development || developmentFromEnvironment
        guard !devClock || development else {
            throw reader.error(
                "dev-clock",
                "a movable clock is for development only: start with --development (YEDI_DEVELOPMENT=1) too")
        }

        var quotas = QuotaLimits.defaults
        for (name, value) in try reader.entries(options.quotas, flag: "quota", variable: "YEDI_QUOTAS") {
            guard let limit = Int64(value), (0...(1 << 50)).contains(limit) else {
                throw reader.error("quota", "\"\(name)=\(value)\": the limit is not a whole number from 0 to 2^50")
            }
            guard quotas.set(name, to: limit) else {
                let names = QuotaLimits.catalogue.map(\.name).joined(separator: ", ")
                throw reader.error("quota", "\"\(name)\" is not a quota; one of \(names)")
            }
        }
        var retention = RetentionPeriods.defaults
        for (name, value) in try reader.entries(options.retention, flag: "retention", variable: "YEDI_RETENTION") {
            guard let hours = Double(value), (0.001...87_600).contains(hours) else {
                throw reader.error("retention", "\"\(name)=\(value)\": the hours are not a number from 0.001 to 87600")
            }
            guard retention.set(name, hours: hours) else {
                let names = RetentionPeriods.catalogue.map(\.name).joined(separator: ", ")
                throw reader.error("retention", "\"\(name)\" is not a retention period; one of \(names)")
            }
        }

        let appsFolder = reader.text(options.apps, flag: "apps", default: "")
        let port = try reader.integer(options.port, flag: "port", default: defaults.port, range: 0...65_535)
        let replica = reader.text(options.replica, flag: "replica", default: "\(host):\(port)")
        guard (1...64).contains(replica.utf8.count),
            replica.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F })
        else { throw reader.error("replica", "\"\(replica)\" is not 1 to 64 visible ASCII characters") }

        return ServiceConfiguration(
            name: defaults.name,
            host: host,
            port: port,
            metricsPort: try reader.integer(
                options.metricsPort, flag: "metrics-port", default: defaults.metricsPort, range: 0...65_535),
            dataDirectory: try reader.nonEmpty(options.data, flag: "data", default: "data/\(defaults.name)"),
            certificateFile: reader.text(options.cert, flag: "cert", default: inPKI("\(defaults.name).pem")),
            privateKeyFile: reader.text(options.key, flag: "key", default: inPKI("\(defaults.name).key")),
            caFile: reader.text(options.ca, flag: "ca", default: inPKI("ca.pem")),
            tokenPublicKeyFiles: tokenKeyFiles,
            tokenSigningKeyFile: reader.text(
                options.tokenSigningKey, flag: "token-signing-key", default: inPKI("token-signing.key")),
            logKeyFile: Optional(reader.text(options.logKey, flag: "log-key", default: "")).flatMap {
                $0.isEmpty ? nil : $0
            },
            peers: peers,
            imageCacheItems: try reader.integer(
                options.imageCacheItems, flag: "image-cache-items", default: 50, range: 1...1_000_000),
            textCacheItems: try reader.integer(
                options.textCacheItems, flag: "text-cache-items", default: 1_000, range: 1...10_000_000),
            maxFrameBytes: try reader.integer(
                options.maxFrameBytes, flag: "max-frame-bytes", default: defaults.maxFrameBytes,
                range: 1_024...(64 << 20)),
            signInRatePerAddress: try reader.rate(
                options.signInRatePerAddress, flag: "sign-in-rate-per-address",
                default: Self.defaultSignInRatePerAddress),
            signInRatePerConnection: try reader.rate(
                options.signInRatePerConnection, flag: "sign-in-rate-per-connection",
                default: Self.defaultSignInRatePerConnection),
            logLevel: level,
            shutdownGrace: .milliseconds(Int64(grace * 1_000)),
            development: development,
            devClock: devClock,
            quotas: quotas,
            retention: retention,
            appsFolder: appsFolder.isEmpty ? nil : appsFolder,
            senders: try OutsideSenderSettings.resolve(options, reader: reader),
            payments: try PaymentSettings.resolve(options, reader: reader),
            images: try defaults.imagePort.map { port throws(ConfigurationError) in
                try ImageServerSettings.resolve(options, host: host, defaultPort: port, reader: reader)
            },
            database: try DatabaseSettings.resolve(options, reader: reader),
            replica: replica
        )
    }

    /// 20 per minute per address: a household or an office behind one address signs in a few times a
    /// minute at most; an attacker gets 20 hashes (~2 CPU-seconds) a minute per address.
    public static let defaultSignInRatePerAddress = RateLimit(burst: 20, period: .seconds(60))
    /// 10 per minute per connection: an app makes one or two of these calls per connection.
    public static let defaultSignInRatePerConnection = RateLimit(burst: 10, period: .seconds(60))

    /// `account=10.0.0.5:7001,10.0.0.6:7001`
    private static func parsePeer(
        _ entry: String,
        reader: OptionReader
    ) throws(ConfigurationError) -> (String, [ClientConfiguration.Target]) {
        let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, ServiceDefaults.developmentPorts[parts[0]] != nil else {
            throw reader.error(
                "peer",
                "\"\(entry)\" is not NAME=HOST:PORT[,HOST:PORT…] with NAME one of account, content, booking, chat")
        }
        var targets: [ClientConfiguration.Target] = []
        for address in parts[1].split(separator: ",") {
            guard let target = ClientConfiguration.Target(String(address)) else {
                throw reader.error("peer", "\"\(address)\" (peer \(parts[0])) is not HOST:PORT")
            }
            targets.append(target)
        }
        guard !targets.isEmpty else { throw reader.error("peer", "peer \(parts[0]) has no address") }
        return (parts[0], targets)
    }
}

/// What a service is when nobody says otherwise.
public struct ServiceDefaults: Sendable {
    /// `account`: names the certificate, the data folder, the database file and the logs.
    public var name: String
    public var port: Int
    public var metricsPort: Int
    public var maxFrameBytes: Int
    /// The services this one calls.
    public var peers: [String]
    /// The HTTPS port images are served on by URL; nil: the service serves none (all but ContentService).
    public var imagePort: Int?

    public init(
        name: String, port: Int, metricsPort: Int, maxFrameBytes: Int = 4 << 20, peers: [String] = [],
        imagePort: Int? = nil
    ) {
        self.name = name
        self.port = port
        self.metricsPort = metricsPort
        self.maxFrameBytes = maxFrameBytes
        self.peers = peers
        self.imagePort = imagePort
    }

    /// Where `deploy/start.sh` runs each service, so a development peer needs no configuration.
    public static let developmentPorts = ["account": 7001, "content": 7002, "booking": 7003, "chat": 7004]
}

/// Reads one option from its flag, else its `YEDI_…` variable, else a default.
struct OptionReader {
    let environment: [String: String]

    /// `metrics-port` → `YEDI_METRICS_PORT`
    static func variable(_ flag: String) -> String {
        "YEDI_" + flag.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    func error(_ flag: String, _ problem: String) -> ConfigurationError {
        // `--peer`, `--quota` and `--retention` repeat; their variable holds the whole list.
        let lists = ["peer": "YEDI_PEERS", "quota": "YEDI_QUOTAS", "retention": "YEDI_RETENTION"]
        let variable = lists[flag] ?? Self.variable(flag)
        return ConfigurationError(option: "--\(flag) (\(variable))", problem: problem)
    }

    func raw(_ value: String?, flag: String) -> String? {
        value ?? environment[Self.variable(flag)]
    }

    /// `NAME=VALUE` entries of a repeated flag, else of its variable (separated by spaces or ';').
    func entries(_ values: [String], flag: String, variable: String) throws(ConfigurationError) -> [(String, String)] {
        let list =
            values.isEmpty
            ? (environment[variable] ?? "").split(whereSeparator: { $0 == " " || $0 == ";" }).map(String.init)
            : values
        var entries: [(String, String)] = []
        for entry in list {
            let parts = entry.split(separator: "=", maxSplits: 1).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard parts.count == 2, !parts[0].isEmpty else { throw error(flag, "\"\(entry)\" is not NAME=VALUE") }
            entries.append((parts[0], parts[1]))
        }
        return entries
    }

    func text(_ value: String?, flag: String, default fallback: String) -> String {
        raw(value, flag: flag) ?? fallback
    }

    func nonEmpty(_ value: String?, flag: String, default fallback: String) throws(ConfigurationError) -> String {
        let text = text(value, flag: flag, default: fallback)
        guard !text.isEmpty else { throw error(flag, "must not be empty") }
        return text
    }

    func integer(
        _ value: String?,
        flag: String,
        default fallback: Int,
        range: ClosedRange<Int>
    ) throws(ConfigurationError) -> Int {
        guard let text = raw(value, flag: flag) else { return fallback }
        guard let number = Int(text.trimmingCharacters(in: .whitespaces)), range.contains(number) else {
            throw error(flag, "\"\(text)\" is not a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    func number(
        _ value: String?,
        flag: String,
        default fallback: Double,
        range: ClosedRange<Double>,
        as: Double.Type
    ) throws(ConfigurationError) -> Double {
        guard let text = raw(value, flag: flag) else { return fallback }
        guard let number = Double(text.trimmingCharacters(in: .whitespaces)), range.contains(number) else {
            throw error(flag, "\"\(text)\" is not a number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    /// `CALLS/SECONDS`, e.g. `20/60`.
    func rate(_ value: String?, flag: String, default fallback: RateLimit) throws(ConfigurationError) -> RateLimit {
        guard let text = raw(value, flag: flag) else { return fallback }
        guard let limit = RateLimit(parsing: text) else {
            throw error(
                flag, "\"\(text)\" is not CALLS/SECONDS (calls 1 to 1000000, seconds 1 to 86400), e.g. \(fallback)")
        }
        return limit
    }

    func boolean(_ value: String?, flag: String) throws(ConfigurationError) -> Bool {
        switch value?.lowercased() {
        case nil, "", "0", "false", "no", "off": return false
        case "1", "true", "yes", "on": return true
        default: throw error(flag, "\"\(value ?? "")\" is not 1/true/yes/on or 0/false/no/off")
        }
    }
}
