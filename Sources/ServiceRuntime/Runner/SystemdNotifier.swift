import Foundation
import Logging
import RPCCore
import RPCObservability
import ServiceLifecycle

#if canImport(Glibc)
    import Glibc
#endif

/// Tells systemd when the service is really serving (`Type=notify`): `READY=1` once the RPC server and
/// `/metrics` are listening and health says SERVING, `STOPPING=1` when graceful shutdown begins. So
/// `systemctl start` returns, and units ordered after this one start, only when calls can succeed.
///
/// It does nothing unless systemd set `NOTIFY_SOCKET` (the sd_notify protocol: one datagram per state
/// change to that AF_UNIX socket; a leading `@` names an abstract socket). It is the last member of the
/// service group, so it is the first to hear of shutdown.
struct SystemdNotifier: Service {
    let socketPath: String
    let server: RPCServer
    let observability: ObservabilityServer
    let logger: Logger

    /// A notifier when running under systemd with `Type=notify`, else nil.
    init?(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        server: RPCServer, observability: ObservabilityServer, logger: Logger
    ) {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return nil }
        self.socketPath = path
        self.server = server
        self.observability = observability
        self.logger = logger
    }

    func run() async throws {
        let address = try await server.listeningAddress()
        let metricsPort = try await observability.port
        while server.health.status(of: "") != .serving {
            try await Task.sleep(for: .milliseconds(5))
        }
        notify("READY=1\nSTATUS=serving RPC on \(address), metrics on 127.0.0.1:\(metricsPort)")
        try? await gracefulShutdown()
        notify("STOPPING=1\nSTATUS=shutting down: calls in flight are finishing")
    }

    private func notify(_ state: String) {
        if let failure = Self.send(state, to: socketPath) {
            logger.warning("systemd notification failed", metadata: ["socket": "\(socketPath)", "error": "\(failure)"])
        }
    }

    /// Sends one datagram; the reason on failure.
    static func send(_ message: String, to path: String) -> String? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(path.utf8)
        if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }  // abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { return "socket path too long" }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: pathBytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count)
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return String(cString: strerror(errno)) }
        defer { close(descriptor) }
        let sent = message.utf8CString.withUnsafeBufferPointer { text in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, text.baseAddress, text.count - 1, Int32(MSG_NOSIGNAL), $0, length)
                }
            }
        }
        return sent < 0 ? String(cString: strerror(errno)) : nil
    }
}
