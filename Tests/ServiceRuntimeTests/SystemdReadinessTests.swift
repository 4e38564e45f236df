import Foundation
import RPCTestSupport
import ServiceTestSupport
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// Under systemd (`Type=notify`) a service says READY=1 only once it serves, and STOPPING=1 on SIGTERM.
final class SystemdReadinessTests: XCTestCase {
    func testTheRealExecutableNotifiesReadyWhenServingAndStoppingOnSIGTERM() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("yedi-notify-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let socket = try NotifySocket(path: scratch.appendingPathComponent("notify").path)
        let pki = try TestPKI.get()
        let process = try RunningProcess(
            try BuiltProducts.path("AccountService"),
            [
                "--port", "0", "--metrics-port", "0", "--pki", pki.devPKI.path, "--data",
                scratch.appendingPathComponent("data").path,
            ],
            environment: ["NOTIFY_SOCKET": socket.path])

        let ready = socket.receive(timeout: 30)
        XCTAssertEqual(
            ready?.split(separator: "\n").first, "READY=1", "got \(ready ?? "nothing"): \(process.errorOutput)")
        XCTAssertTrue(ready?.contains("STATUS=serving RPC on ") == true, "the status names the address")
        // The port is open when READY arrives; the log line may still be in the pipe, so it is waited for.
        let address = ready?.split(separator: "STATUS=serving RPC on ").last?.split(separator: ",").first
        let port = address?.split(separator: ":").last
        XCTAssertTrue(
            port.flatMap { Int($0) }.map(Self.acceptsConnections(port:)) == true,
            "READY before listening: \(ready ?? "")")
        XCTAssertTrue(process.waitForOutput(timeout: 10) { $0.contains("listening") }, process.errorOutput)

        process.send(SIGTERM)
        let stopping = socket.receive(timeout: 30)
        XCTAssertEqual(stopping?.split(separator: "\n").first, "STOPPING=1")
        let result = process.finish(timeout: 30)
        XCTAssertEqual(result.exitCode, 0, result.errorOutput)
    }

    /// Whether a TCP connect to the loopback port succeeds now (no retry: a refusal is the answer).
    private static func acceptsConnections(port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

/// The receiving end of sd_notify: an AF_UNIX datagram socket bound to a path.
private final class NotifySocket {
    let path: String
    private let descriptor: Int32

    init(path: String) throws {
        self.path = path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard descriptor >= 0, bound == 0 else {
            throw XCTSkip("cannot bind a notify socket at \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(descriptor) }

    /// The next datagram, or nil after `timeout` seconds.
    func receive(timeout: TimeInterval) -> String? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }
}
