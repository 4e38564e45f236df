import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Which engine a service stores its data in (docs/postgres.md): SQLite in `<data>/<service>.sqlite`
/// (the default, one process per service), or a PostgreSQL database shared by the service's replicas.
public enum DatabaseSettings: Sendable, Equatable {
    case sqlite
    case postgres(PostgresSettings)

    static func resolve(_ options: ServiceOptions, reader: OptionReader) throws(ConfigurationError) -> Self {
        let engine = reader.text(options.database, flag: "database", default: "sqlite")
        guard engine != "sqlite" else {
            for (value, flag) in [
                (options.databasePasswordFile, "database-password-file"), (options.databaseCa, "database-ca"),
            ] where reader.raw(value, flag: flag).map({ !$0.isEmpty }) == true {
                throw reader.error(flag, "only with a PostgreSQL --database")
            }
            return .sqlite
        }
        return .postgres(try PostgresSettings.resolve(engine, options, reader: reader))
    }
}

/// Where and how a service reaches its PostgreSQL database; checked at start, one clear line per bad
/// value. The password never comes from the URL (it would show in `ps`, the unit file and logs): it is
/// read from a file only its owner may read.
public struct PostgresSettings: Sendable, Equatable {
    /// TCP to `host:port`, or the Unix socket `<folder>/.s.PGSQL.<port>`.
    public enum Address: Sendable, Equatable {
        case tcp(host: String, port: Int)
        case unixSocket(folder: String, port: Int)

        /// The socket file's path (Unix sockets only).
        public var socketPath: String? {
            guard case .unixSocket(let folder, let port) = self else { return nil }
            return URL(fileURLWithPath: folder).appendingPathComponent(".s.PGSQL.\(port)").path
        }
    }

    /// `sslmode`: only these two. `require` (encryption without knowing whom to) is not offered.
    public enum TLSMode: String, Sendable, Equatable {
        case disable
        case verifyFull = "verify-full"
    }

    public var address: Address
    public var role: String
    public var database: String
    public var passwordFile: String
    public var tls: TLSMode
    /// CA certificates the server's certificate is verified against; nil: the system's.
    public var caFile: String?
    public var poolSize: Int
    /// The longest a store call waits for a connection and its answer.
    public var timeout: Duration
    /// How long a starting service keeps trying to reach PostgreSQL.
    public var connectTimeout: Duration

    /// Where it is, for logs and start-up errors (never the password).
    public var displayAddress: String {
        switch address {
        case .tcp(let host, let port): "\(role)@\(host):\(port)/\(database)"
        case .unixSocket(let folder, let port): "\(role)@\(folder)/.s.PGSQL.\(port)/\(database)"
        }
    }

    /// The password file's content (whitespace around it dropped), read when connecting.
    public func readPassword() throws -> String {
        try SecretSource.file(passwordFile).read().value
    }

    public init(
        address: Address, role: String, database: String, passwordFile: String, tls: TLSMode, caFile: String? = nil,
        poolSize: Int = 6, timeout: Duration = .seconds(5), connectTimeout: Duration = .seconds(30)
    ) {
        self.address = address
        self.role = role
        self.database = database
        self.passwordFile = passwordFile
        self.tls = tls
        self.caFile = caFile
        self.poolSize = poolSize
        self.timeout = timeout
        self.connectTimeout = connectTimeout
    }

    /// `postgresql://ROLE@HOST[:PORT]/DB[?sslmode=…]` or `postgresql://ROLE@[HOST][:PORT]/DB?host=/socket/folder`.
    static func resolve(
        _ text: String,
        _ options: ServiceOptions,
        reader: OptionReader
    ) throws(ConfigurationError) -> Self {
        let shape = "is neither sqlite nor postgresql://ROLE@HOST:PORT/DATABASE (or ?host=/socket/folder)"
        guard text.utf8.count <= 1_024, let components = URLComponents(string: text),
            ["postgresql", "postgres"].contains(components.scheme?.lowercased() ?? "")
        else { throw reader.error("database", shape) }
        // Checked before anything is quoted back: the message must not repeat the password.
        guard components.password == nil else {
            throw reader.error(
                "database",
                "the URL holds a password; give it in a file with --database-password-file "
                    + "(YEDI_DATABASE_PASSWORD_FILE) instead")
        }
        guard let role = components.user, Self.isName(role) else {
            throw reader.error("database", "names no role (postgresql://ROLE@…); 1 to 63 letters, digits or _")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard Self.isName(database) else {
            throw reader.error("database", "names no database (…/DATABASE); 1 to 63 letters, digits or _")
        }
        var socketFolder: String?
        var sslmode: String?
        for item in components.queryItems ?? [] {
            switch item.name {
            case "host": socketFolder = item.value
            case "sslmode": sslmode = item.value
            default:
                throw reader.error("database", "unknown URL parameter \"\(item.name)\"; only host and sslmode")
            }
        }
        let port = components.port ?? 5432
        guard (1...65_535).contains(port) else { throw reader.error("database", "port \(port) is not 1 to 65535") }

        let address: Address
        if let folder = socketFolder {
            guard folder.hasPrefix("/") else {
                throw reader.error("database", "?host= must be an absolute socket folder, got \"\(folder)\"")
            }
            // sun_path holds 107 bytes and a NUL.
            guard folder.utf8.count + ".s.PGSQL.\(port)".utf8.count + 1 <= 107 else {
                throw reader.error("database", "the socket folder \(folder) is too long for a Unix socket (107 bytes)")
            }
            address = .unixSocket(folder: folder, port: port)
        } else {
            guard let host = components.host, !host.isEmpty else {
                throw reader.error("database", "names no host (…@HOST:PORT/…, or ?host=/socket/folder)")
            }
            address = .tcp(host: host, port: port)
        }

        let local: Bool
        switch address {
        case .unixSocket: local = true
        case .tcp(let host, _): local = ["localhost", "127.0.0.1", "::1", "[::1]"].contains(host.lowercased())
        }
        let tls: TLSMode
        switch sslmode {
        case nil: tls = local ? .disable : .verifyFull
        case let mode?:
            guard let chosen = TLSMode(rawValue: mode) else {
                throw reader.error("database", "sslmode=\(mode) is not verify-full or disable")
            }
            tls = chosen
        }
        if tls == .disable && !local {
            throw reader.error(
                "database", "sslmode=disable is only for a Unix socket or loopback; another host needs verify-full")
        }
        if tls == .verifyFull, case .unixSocket = address {
            throw reader.error("database", "sslmode=verify-full does not apply to a Unix socket; leave it out")
        }

        let caFile = reader.text(options.databaseCa, flag: "database-ca", default: "")
        if !caFile.isEmpty {
            guard tls == .verifyFull else { throw reader.error("database-ca", "only with sslmode=verify-full") }
            guard FileManager.default.isReadableFile(atPath: caFile) else {
                throw reader.error("database-ca", "\(caFile) is not a readable file")
            }
        }

        guard let passwordFile = reader.raw(options.databasePasswordFile, flag: "database-password-file"),
            !passwordFile.isEmpty
        else {
            throw reader.error(
                "database-password-file",
                "required with a PostgreSQL --database (a file of mode 0600, or 0640 owned by root and the service's group)"
            )
        }
        try Self.checkPasswordFile(passwordFile, reader: reader)

        let timeout = try reader.number(
            options.databaseTimeout, flag: "database-timeout", default: 5, range: 0.05...600, as: Double.self)
        let connectTimeout = try reader.number(
            options.databaseConnectTimeout, flag: "database-connect-timeout", default: 30, range: 0...3_600,
            as: Double.self)
        return PostgresSettings(
            address: address, role: role, database: database, passwordFile: passwordFile, tls: tls,
            caFile: caFile.isEmpty ? nil : caFile,
            poolSize: try reader.integer(
                options.databasePoolSize, flag: "database-pool-size", default: 6, range: 1...100),
            timeout: .milliseconds(Int64(timeout * 1_000)),
            connectTimeout: .milliseconds(Int64(connectTimeout * 1_000)))
    }

    /// PostgreSQL identifiers as we create them: lower-case letters, digits and `_`, at most 63 bytes (the
    /// server's limit), so that no name needs quoting.
    static func isName(_ text: String) -> Bool {
        (1...63).contains(text.utf8.count)
            && text.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F }
            && !(0x30...0x39).contains(text.utf8.first!)
    }

    /// The file must exist, hold text, and be readable by its owner only (0600 or 0400), or, owned by root,
    /// by its group too when that is this process's group (0640: deploy/install.sh gives it to the
    /// service's own group, as PostgreSQL's server accepts its own key; never a group other services share).
    private static func checkPasswordFile(_ path: String, reader: OptionReader) throws(ConfigurationError) {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw reader.error("database-password-file", "\(path): \(String(cString: strerror(errno)))")
        }
        let mode = status.st_mode & 0o777
        guard mode & 0o077 == 0 || (status.st_uid == 0 && status.st_gid == getegid() && mode & 0o037 == 0) else {
            throw reader.error(
                "database-password-file",
                "\(path) is readable by others (mode \(String(mode, radix: 8))); make it 0600 (chmod 600), or "
                    + "0640 owned by root and this service's group")
        }
        do {
            _ = try SecretSource.file(path).read()
        } catch {
            throw reader.error("database-password-file", "\(error)")
        }
    }
}
