import Foundation
import RPCCore
import RPCTestSupport
import XCTest

/// The probe's requests are bounded by the frame limit the server announces in its SETTINGS, not by the
/// client's 4 MiB default: ContentService takes 11 MiB frames for 10 MiB images.
final class ProbeFrameLimitTests: XCTestCase {
    var pki: TestPKI!
    var service: EchoTestService!
    var server: RunningServer!

    override func setUp() async throws {
        _ = try ProbeExecutable.require()
        pki = try TestPKI.get()
        service = EchoTestService()
        server = try await RunningServer.start(pki: pki, services: [service]) { configuration in
            configuration.limits = WireLimits(maxFrameBytes: 11 << 20)
        }
    }

    override func tearDown() async throws {
        await server?.stop()
    }

    /// `yedi-probe call … Echo/Echo @file` with a payload of `bytes` bytes (too large for an argument).
    private func echo(_ text: String, payloadBytes bytes: Int) throws -> ProcessResult {
        let payload = Data(repeating: 0x5A, count: bytes).base64EncodedString()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("probe-large-\(UUID()).json")
        try Data(#"{"text": "\#(text)", "payload": "\#(payload)"}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        return try probe(
            [
                "call", "127.0.0.1:\(server.port)", "yedi.echo.Echo/Echo", "@\(file.path)", "--ca", pki.caFile,
                "--field", "text",
            ])
    }

    func testASixMiBRequestGoesToAServerAnnouncingElevenMiB() throws {
        let result = try echo("six", payloadBytes: 6 << 20)
        assertExit(result, 0)
        XCTAssertEqual(result.output, "six\n", "the 6 MiB reply came back too")
        XCTAssertEqual(service.probe.finishedCalls, ["six"])
    }

    func testARequestOverTheAnnouncedLimitIsRefusedLocallyWithAClearMessage() throws {
        let result = try echo("twelve", payloadBytes: 12 << 20)
        assertExit(result, 18)  // 10 + RESOURCE_EXHAUSTED
        XCTAssertTrue(
            result.errorOutput.hasPrefix("ERROR: RESOURCE_EXHAUSTED: the request frame ("), result.errorOutput)
        XCTAssertTrue(
            result.errorOutput.contains("exceeds the frame limit of \(11 << 20) bytes the server announced"),
            result.errorOutput)
        XCTAssertEqual(service.probe.startedCalls, [], "nothing reached the server")
    }
}
