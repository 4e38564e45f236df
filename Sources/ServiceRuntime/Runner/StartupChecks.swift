import Foundation
import NIOCore
import NIOPosix
import RPCCore
import RPCTLS

#if canImport(Glibc)
    import Glibc
#endif

/// Why a service refuses to start, worded for the operator who has to fix it: what is wrong, with which
/// file, folder or port, and where the setting comes from.
public struct StartupError: Error, CustomStringConvertible, Sendable {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// What a service checks before it opens its database: a deployment mistake (a missing certificate, a key
/// of another certificate, a data folder it cannot write, a port someone else holds) stops the process at
/// once with one clear line, before anything is created or migrated, instead of a library's error from
/// halfway through starting.
enum StartupChecks {
    static func run(_ configuration: ServiceConfiguration) async throws(StartupError) {
        try tls(configuration)
        try dataFolder(configuration.dataDirectory)
        try await portIsFree(configuration.host, configuration.port, what: "RPC port", option: "--port (YEDI_PORT)")
        try await portIsFree(
            "127.0.0.1", configuration.metricsPort, what: "metrics port", option: "--metrics-port (YEDI_METRICS_PORT)")
        if let images = configuration.images {
            try await portIsFree(
                configuration.host, images.port, what: "image port", option: "--image-port (YEDI_IMAGE_PORT)")
        }
    }

    /// Loads the server's certificate, key and CA exactly as the server will.
    static func tls(_ configuration: ServiceConfiguration) throws(StartupError) {
        let server = TLSConfiguration.server(
            certificateChainFile: configuration.certificateFile,
            privateKeyFile: configuration.privateKeyFile,
            trustRootsFile: configuration.caFile,
            clientCertificateVerification: .optional
        )
        do {
            _ = try TLSContext(configuration: server)
        } catch {
            throw StartupError(
                """
                TLS setup failed: \(error). Certificate \(configuration.certificateFile), key \
                \(configuration.privateKeyFile), CA \(configuration.caFile) (set with --cert/--key/--ca or \
                YEDI_CERT/YEDI_KEY/YEDI_CA, or --pki; deploy/dev-pki.sh makes a development set)
                """)
        }
    }

    /// Creates the folder if needed and proves a file can be written, synced and removed in it.
    static func dataFolder(_ path: String) throws(StartupError) {
        func refuse(_ reason: String) -> StartupError {
            StartupError("data folder \(path) cannot be used: \(reason) (set with --data or YEDI_DATA)")
        }
        if let reason = makeDirectories(path) { throw refuse("cannot create it: \(reason)") }
        try PrivateFiles.tighten(path, to: PrivateFiles.folderMode)
        let probe = URL(fileURLWithPath: path).appendingPathComponent(".yedi-write-check").path
        let descriptor = open(probe, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw refuse("cannot write in it: \(String(cString: strerror(errno)))") }
        let synced = fsync(descriptor) == 0 ? nil : String(cString: strerror(errno))
        close(descriptor)
        unlink(probe)
        if let synced { throw refuse("cannot sync a file in it: \(synced)") }
    }

    /// Binds and releases the port, so that "someone else has it" is said before anything starts. A port
    /// taken between this check and the real bind still fails the start, with the system's message.
    static func portIsFree(_ host: String, _ port: Int, what: String, option: String) async throws(StartupError) {
        guard port != 0 else { return }
        do {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: host, port: port).get()
            try await channel.close()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw StartupError("\(what) \(host):\(port) is already in use by another process (set with \(option))")
        } catch {
            throw StartupError("cannot listen on \(host):\(port) (\(what), set with \(option)): \(error)")
        }
    }

    /// `mkdir -p`, answering the system's reason on failure ("Not a directory"); Foundation's errors on
    /// Linux do not always carry it.
    private static func makeDirectories(_ path: String) -> String? {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/\(component)"
            if mkdir(prefix, 0o755) == 0 { continue }
            let failure = errno
            var status = stat()
            if failure == EEXIST, stat(prefix, &status) == 0 {
                if status.st_mode & S_IFMT == S_IFDIR { continue }
                return "\(prefix): \(String(cString: strerror(ENOTDIR)))"
            }
            return "\(prefix): \(String(cString: strerror(failure)))"
        }
        return nil
    }
}
