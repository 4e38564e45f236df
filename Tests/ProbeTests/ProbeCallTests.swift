import Foundation
import NIOPosix
import RPCCore
import RPCTestSupport
import XCTest
import YediProto

#if canImport(Glibc)
    import Glibc
#endif

/// `call` and `health` against a real TLS server in this process, the probe running as a subprocess.
final class ProbeCallTests: XCTestCase {
    var pki: TestPKI!
    var service: EchoTestService!
    var server: RunningServer!

    override func setUp() async throws {
        _ = try ProbeExecutable.require()
        pki = try TestPKI.get()
        service = EchoTestService()
        server = try await RunningServer.start(pki: pki, services: [service])
        // The server marks its services SERVING just after it reports its address: wait, so that health
        // tests (which change a status) cannot race it.
        let health = server.server.health
        let serving = await eventually { health.status(of: "yedi.echo.Echo") == .serving }
        XCTAssertTrue(serving, "the server did not mark yedi.echo.Echo SERVING")
    }

    override func tearDown() async throws {
        await server?.stop()
    }

    var address: String { "127.0.0.1:\(server.port)" }

    /// `yedi-probe call ADDRESS METHOD [request] --ca <dev CA> arguments…`
    func call(
        _ method: String,
        _ request: String? = nil,
        _ arguments: [String] = [],
        input: String? = nil
    ) throws -> ProcessResult {
        try probe(
            ["call", address, method] + (request.map { [$0] } ?? []) + ["--ca", pki.caFile] + arguments, input: input)
    }

    func jsonObject(_ text: some StringProtocol) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], String(text))
    }

    // MARK: Unary

    func testUnaryCallFromArgument() throws {
        let result = try call("yedi.echo.Echo/Echo", #"{"text": "안녕하세요", "payload": "AQID"}"#)
        assertExit(result, 0)
        XCTAssertEqual(result.errorOutput, "")
        let reply = try jsonObject(result.output)
        XCTAssertEqual(reply["text"] as? String, "안녕하세요")
        XCTAssertEqual(reply["payload"] as? String, "AQID", "bytes are base64")
        XCTAssertTrue(result.output.hasPrefix("{\n  \""), "a unary reply is indented:\n\(result.output)")
        XCTAssertEqual(service.probe.finishedCalls, ["안녕하세요"])
    }

    /// Several addresses (a service's replicas): the call goes to one that is up, whichever is listed first.
    func testACallToSeveralAddressesGoesToOneThatIsUp() throws {
        let down = try unusedLoopbackPort()
        let result = try probe(
            [
                "call", "127.0.0.1:\(down),\(address)", "yedi.echo.Echo/Echo", #"{"text": "replica"}"#, "--ca",
                pki.caFile,
            ])
        assertExit(result, 0)
        XCTAssertEqual(try jsonObject(result.output)["text"] as? String, "replica")
        XCTAssertEqual(service.probe.finishedCalls, ["replica"])
        let refused = try probe(["health", "127.0.0.1:\(down),\(address)", "--ca", pki.caFile])
        XCTAssertNotEqual(refused.exitCode, 0)
        XCTAssertTrue(refused.errorOutput.contains("health checks one server"), refused.errorOutput)
        let malformed = try probe(["call", "\(address),nope", "yedi.echo.Echo/Echo", "--ca", pki.caFile])
        XCTAssertNotEqual(malformed.exitCode, 0)
    }

    func testFieldPrintsOneFieldOfEachReplyForScripts() throws {
        let text = try call("yedi.echo.Echo/Echo", #"{"text": "토큰"}"#, ["--field", "text"])
        assertExit(text, 0)
        XCTAssertEqual(text.output, "토큰\n", "a string prints raw, without quotes")
        let unset = try call("yedi.echo.Echo/Echo", #"{"text": "x"}"#, ["--field", "payload"])
        assertExit(unset, 0)
        XCTAssertEqual(unset.output, "\n", "a field at its default is found (empty bytes)")
        let streamed = try call("yedi.echo.Echo/Expand", #"{"count": 3}"#, ["--field", "sequence"])
        assertExit(streamed, 0)
        XCTAssertEqual(streamed.output, "0\n1\n2\n", "one line per reply (int64 is a JSON string, printed raw)")
        let missing = try call("yedi.echo.Echo/Echo", #"{"text": "x"}"#, ["--field", "text.inner"])
        assertExit(missing, 9)
        XCTAssertTrue(missing.errorOutput.contains("no text.inner"), missing.errorOutput)
    }

    func testUnaryCallFromFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("probe-request-\(UUID()).json")
        try Data("{\n  \"text\": \"파일\",\n  \"payload\": \"/w==\"\n}\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try call("yedi.echo.Echo/Echo", "@\(file.path)")
        assertExit(result, 0)
        let reply = try jsonObject(result.output)
        XCTAssertEqual(reply["text"] as? String, "파일")
        XCTAssertEqual(reply["payload"] as? String, "/w==")
    }

    func testUnaryCallFromStdin() throws {
        let result = try call("yedi.echo.Echo/Echo", "-", input: #"{"text": "stdin 입력"}"#)
        assertExit(result, 0)
        XCTAssertEqual(try jsonObject(result.output)["text"] as? String, "stdin 입력")
    }

    func testEmptyRequestByDefaultAndEmitDefaults() throws {
        let plain = try call("yedi.echo.Echo/Echo")
        assertExit(plain, 0)
        XCTAssertEqual(plain.output, "{}\n")
        let defaults = try call("yedi.echo.Echo/Echo", nil, ["--emit-defaults"])
        assertExit(defaults, 0)
        let reply = try jsonObject(defaults.output)
        XCTAssertEqual(reply["payload"] as? String, "")
        XCTAssertEqual(reply["text"] as? String, "")
        XCTAssertEqual(reply["sequence"] as? String, "0", "int64 defaults are strings too")
    }

    func testTextFormat() throws {
        let result = try call(
            "yedi.echo.Echo/Echo", #"{"text": "안녕 \"hi\"", "payload": "AAEC"}"#, ["--format", "text"])
        assertExit(result, 0)
        XCTAssertEqual(result.output, "payload: \"\\000\\001\\002\"\ntext: \"안녕 \\\"hi\\\"\"\n")
    }

    func testMetadataAndTokenReachTheServer() throws {
        let result = try call(
            "yedi.echo.Echo/Echo",
            #"{"text": "meta"}"#,
            ["-H", "x-request-id: r-42", "-H", "X-Tenant:seoul", "--token", "tok-123"]
        )
        assertExit(result, 0)
        let context = try XCTUnwrap(service.probe.context(of: "meta"))
        XCTAssertEqual(context.metadata["x-request-id"], "r-42")
        XCTAssertEqual(context.metadata["x-tenant"], "seoul", "keys are lowercased, values kept")
        XCTAssertEqual(context.metadata["authorization"], "Bearer tok-123")
        XCTAssertNil(context.peer.identity, "no client certificate unless asked for")
    }

    func testClientCertificate() throws {
        let result = try call(
            "yedi.echo.Echo/Echo",
            #"{"text": "mtls"}"#,
            ["--cert", pki.certificate("yedi-probe"), "--key", pki.key("yedi-probe")]
        )
        assertExit(result, 0)
        XCTAssertEqual(service.probe.context(of: "mtls")?.peer.identity?.commonName, "yedi-probe")
    }

    func testVerboseNarratesOnStderr() throws {
        let result = try call(
            "yedi.echo.Echo/Echo",
            #"{"text": "verbose"}"#,
            ["--verbose", "-H", "x-request-id: v-1", "--token", "very-secret-token"]
        )
        assertExit(result, 0)
        let narration = result.errorOutput
        for line in [
            "* connecting to \(address)", "* connected in ", "* calling yedi.echo.Echo/Echo (unary, timeout 10 s)",
            "> x-request-id: v-1", "> authorization: <redacted>", "< status: OK", "* elapsed: ",
        ] {
            XCTAssertTrue(narration.contains(line), "stderr lacks \"\(line)\":\n\(narration)")
        }
        XCTAssertFalse(narration.contains("very-secret-token"), "tokens are not printed")
        XCTAssertEqual(try jsonObject(result.output)["text"] as? String, "verbose", "stdout carries only the reply")
    }

    // MARK: Server streaming

    func testStreamingCallPrintsOneCompactLinePerReply() throws {
        let result = try call("yedi.echo.Echo/Expand", #"{"count": "3", "payloadSize": 2, "text": "s"}"#)
        assertExit(result, 0)
        XCTAssertEqual(
            result.output,
            """
            {"payload":"Wlo=","text":"s"}
            {"payload":"Wlo=","text":"s","sequence":"1"}
            {"payload":"Wlo=","text":"s","sequence":"2"}

            """
        )
        let text = try call("yedi.echo.Echo/Expand", #"{"count": 2, "text": "t"}"#, ["--format", "text"])
        assertExit(text, 0)
        XCTAssertEqual(text.output, "text: \"t\"\ntext: \"t\" sequence: 1\n")
    }

    /// Ctrl-C during an endless stream: the probe cancels the call, the server's handler sees the
    /// cancellation, and the probe exits 130 saying "cancelled".
    func testInterruptCancelsTheStreamOnTheServer() async throws {
        let running = try RunningProcess(
            try ProbeExecutable.require(),
            [
                "call", address, "yedi.echo.Echo/Expand", #"{"count": "1000000000", "text": "sigint"}"#, "--ca",
                pki.caFile,
            ]
        )
        defer { running.kill() }
        let streaming = running.waitForOutput(timeout: 60) { output in
            output.components(separatedBy: "\"sequence\"").count > 5
        }
        XCTAssertTrue(streaming, "no stream replies:\n\(running.output.prefix(2000))\n\(running.errorOutput)")
        running.send(SIGINT)
        let result = running.finish(timeout: 30)
        XCTAssertFalse(result.timedOut, "the probe did not exit after SIGINT")
        XCTAssertEqual(result.exitCode, 130, result.errorOutput)
        XCTAssertEqual(result.errorOutput, "yedi-probe: cancelled\n")
        let lines = result.output.split(separator: "\n")
        XCTAssertGreaterThan(lines.count, 5)
        for line in lines.prefix(5) { XCTAssertEqual(try jsonObject(line)["text"] as? String, "sigint") }
        // Every printed line is a whole reply: the output was flushed reply by reply.
        XCTAssertTrue(result.output.hasSuffix("}\n"), String(result.output.suffix(200)))
        let cancelled = await eventually(timeout: .seconds(20)) { self.service.probe.cancelledCalls.contains("sigint") }
        XCTAssertTrue(cancelled, "the server handler did not observe the cancellation")
    }

    /// Ctrl-C while a unary call waits for its reply cancels it on the server too.
    func testInterruptCancelsAUnaryCall() async throws {
        let running = try RunningProcess(
            try ProbeExecutable.require(),
            ["call", address, "yedi.echo.Echo/Echo", #"{"text": "hang"}"#, "--ca", pki.caFile, "--timeout", "60"]
        )
        defer { running.kill() }
        let started = await eventually(timeout: .seconds(30)) { self.service.probe.startedCalls.contains("hang") }
        XCTAssertTrue(started, running.errorOutput)
        running.send(SIGINT)
        let result = running.finish(timeout: 30)
        XCTAssertEqual(result.exitCode, 130, result.errorOutput)
        XCTAssertEqual(result.errorOutput, "yedi-probe: cancelled\n")
        let cancelled = await eventually(timeout: .seconds(20)) { self.service.probe.cancelledCalls.contains("hang") }
        XCTAssertTrue(cancelled, "the server handler did not observe the cancellation")
    }

    /// `yedi-probe call … | head -n 3`: when the reader goes away the probe ends (as Unix filters do, by
    /// SIGPIPE) instead of streaming into a closed pipe forever, and the server stops too.
    func testStreamIntoAClosedPipeEnds() async throws {
        let probePath = try ProbeExecutable.require()
        let command =
            "'\(probePath)' call \(address) yedi.echo.Echo/Expand '{\"count\": \"1000000000\", \"text\": \"pipe\"}' "
            + "--ca '\(pki.caFile)' | head -n 3"
        let result = try ProcessRunner.run("/bin/sh", ["-c", command], timeout: 60)
        XCTAssertFalse(result.timedOut, "the pipeline did not end")
        XCTAssertEqual(result.output.split(separator: "\n").count, 3, result.output)
        let cancelled = await eventually(timeout: .seconds(20)) { self.service.probe.cancelledCalls.contains("pipe") }
        XCTAssertTrue(cancelled, "the server kept streaming")
    }

    // MARK: health

    func testHealth() throws {
        let whole = try probe(["health", address, "--ca", pki.caFile])
        assertExit(whole, 0)
        XCTAssertEqual(whole.output, "SERVING\n")
        let echo = try probe(["health", address, "yedi.echo.Echo", "--ca", pki.caFile])
        assertExit(echo, 0)
        XCTAssertEqual(echo.output, "SERVING\n")
        let json = try probe(["health", address, "--ca", pki.caFile, "--format", "json"])
        assertExit(json, 0)
        XCTAssertEqual(try jsonObject(json.output)["status"] as? String, "SERVING_STATUS_SERVING")
    }

    func testTheDevPKIIsFoundFromAnyWorkingDirectory() throws {
        // A checkout elsewhere whose deploy/pki is this server's PKI; the probe runs two folders below it.
        let checkout = FileManager.default.temporaryDirectory.appendingPathComponent("probe-pki-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: checkout) }
        let nested = checkout.appendingPathComponent("Sources/deep")
        try FileManager.default.createDirectory(at: nested, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: checkout.appendingPathComponent("deploy"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: pki.devPKI, to: checkout.appendingPathComponent("deploy/pki"))
        let probePath = try ProbeExecutable.require()

        let fromBelow = try ProcessRunner.run(
            probePath, ["health", address], timeout: 60, environment: ["YEDI_PKI": nil], workingDirectory: nested.path)
        assertExit(fromBelow, 0)
        XCTAssertEqual(fromBelow.output, "SERVING\n")

        let configured = try ProcessRunner.run(
            probePath, ["health", address], timeout: 60, environment: ["YEDI_PKI": pki.devPKI.path],
            workingDirectory: "/")
        assertExit(configured, 0)

        let misconfigured = try ProcessRunner.run(
            probePath, ["health", address], timeout: 60, environment: ["YEDI_PKI": "/nonexistent/pki"],
            workingDirectory: nested.path)
        assertExit(misconfigured, 2)
        XCTAssertTrue(misconfigured.errorOutput.contains("YEDI_PKI"), misconfigured.errorOutput)
    }

    func testHealthNotServingExitsOne() throws {
        server.server.health.setStatus(.notServing, for: "yedi.echo.Echo")
        let result = try probe(["health", address, "yedi.echo.Echo", "--ca", pki.caFile])
        assertExit(result, 1)
        XCTAssertEqual(result.output, "NOT_SERVING\n")
        XCTAssertEqual(result.errorOutput, "")
    }

    func testHealthOfAnUnknownServiceIsNotFound() throws {
        let result = try probe(["health", address, "yedi.nope.Nope", "--ca", pki.caFile])
        assertExit(result, 15)
        XCTAssertTrue(result.errorOutput.hasPrefix("ERROR: NOT_FOUND: "), result.errorOutput)
    }

    // MARK: Failures that involve the server

    func testRPCErrorExitsTenPlusCode() throws {
        let result = try call("yedi.echo.Echo/Echo", #"{"text": "fail:5:gone"}"#)
        assertExit(result, 15)
        XCTAssertEqual(result.errorOutput, "ERROR: NOT_FOUND: gone\n")
        XCTAssertEqual(result.output, "")
        let denied = try call("yedi.echo.Echo/Echo", #"{"text": "fail:7:no\nway"}"#)
        assertExit(denied, 17)
        XCTAssertEqual(denied.errorOutput, "ERROR: PERMISSION_DENIED: no\\nway\n", "one line, whatever the message")
    }

    func testDeadlineExceeded() throws {
        let result = try call("yedi.echo.Echo/Echo", #"{"text": "hang"}"#, ["--timeout", "1.5"])
        assertExit(result, 14)
        XCTAssertTrue(result.errorOutput.hasPrefix("ERROR: DEADLINE_EXCEEDED"), result.errorOutput)
    }

    func testWrongCAIsATLSFailure() throws {
        let result = try probe(["call", address, "yedi.echo.Echo/Echo", "--ca", pki.otherCAFile])
        assertFailure(result, exit: 3, contains: ["certificate verify failed"])
    }

    func testServerNameMismatchIsATLSFailure() throws {
        let result = try call("yedi.echo.Echo/Echo", nil, ["--server-name", "elsewhere.example"])
        assertFailure(result, exit: 3, contains: ["certificate verify failed"])
        let matching = try call("yedi.echo.Echo/Echo", nil, ["--server-name", "localhost"])
        assertExit(matching, 0)
        // A name OpenSSL refuses outright is a TLS failure too, not a crash.
        assertFailure(try call("yedi.echo.Echo/Echo", nil, ["--server-name", ""]), exit: 3, contains: ["server name"])
    }

    func testConnectionRefused() throws {
        let port = try closedLoopbackPort()
        let result = try probe(["call", "127.0.0.1:\(port)", "yedi.echo.Echo/Echo", "--ca", pki.caFile])
        assertFailure(result, exit: 4, contains: ["refused"])
        let health = try probe(["health", "127.0.0.1:\(port)", "--ca", pki.caFile])
        assertFailure(health, exit: 4, contains: ["refused"])
    }
}

/// A loopback port nothing listens on (bound, then closed).
private func unusedLoopbackPort() throws -> Int {
    let channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .bind(host: "127.0.0.1", port: 0).wait()
    let port = try XCTUnwrap(channel.localAddress?.port)
    try channel.close().wait()
    return port
}
