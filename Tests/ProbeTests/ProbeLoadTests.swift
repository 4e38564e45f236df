import Foundation
import RPCTestSupport
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// `yedi-probe load` against a real TLS server in this process, the probe running as a subprocess. The
/// tests check what was counted and reported, never how fast.
final class ProbeLoadTests: XCTestCase {
    var pki: TestPKI!
    var service: EchoTestService!
    var server: RunningServer!

    override func setUp() async throws {
        _ = try ProbeExecutable.require()
        pki = try TestPKI.get()
        service = EchoTestService()
        server = try await RunningServer.start(pki: pki, services: [service])
    }

    override func tearDown() async throws {
        await server?.stop()
    }

    var address: String { "127.0.0.1:\(server.port)" }

    func load(_ method: String, _ request: String, _ arguments: [String]) throws -> ProcessResult {
        try probe(["load", address, method, request, "--ca", pki.caFile] + arguments)
    }

    func jsonObject(_ text: some StringProtocol) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], String(text))
    }

    func testTotalMakesEveryCallWithItsSequenceNumberAndReportsJSON() throws {
        let result = try load("yedi.echo.Echo/Echo", #"{"text":"{{seq}}"}"#, ["--total", "200", "--json", "-c", "8"])
        assertExit(result, 0)
        let lines = result.output.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, "one JSON object:\n\(result.output)")
        let report = try jsonObject(try XCTUnwrap(lines.first))
        XCTAssertEqual(report["calls"] as? Int, 200)
        XCTAssertEqual(report["statuses"] as? [String: Int], ["OK": 200])
        XCTAssertEqual(report["errors"] as? Int, 0)
        XCTAssertEqual(report["concurrency"] as? Int, 8)
        XCTAssertEqual(report["method"] as? String, "yedi.echo.Echo/Echo")
        XCTAssertGreaterThan(try XCTUnwrap(report["callsPerSecond"] as? Double), 0)
        let p99 = try XCTUnwrap(report["p99"] as? Double, "p99 in ms")
        XCTAssertGreaterThan(p99, 0)
        XCTAssertLessThanOrEqual(p99, try XCTUnwrap(report["max"] as? Double))
        // The server saw each sequence number once: the template was expanded per call.
        XCTAssertEqual(service.probe.finishedCalls.sorted { Int($0)! < Int($1)! }, (0..<200).map(String.init))
    }

    /// The issue's example, with a shorter duration: health is served by every RPCCore server.
    func testDurationRunOfHealthCheckAsTheIssueWritesIt() throws {
        let result = try load("yedi.health.Health/Check", "{}", ["--duration", "1", "--json"])
        assertExit(result, 0)
        let report = try jsonObject(result.output)
        let calls = try XCTUnwrap(report["calls"] as? Int)
        XCTAssertGreaterThan(calls, 0)
        XCTAssertEqual(report["statuses"] as? [String: Int], ["OK": calls])
        XCTAssertNotNil(report["p99"] as? Double)
        XCTAssertNotNil(report["callsPerSecond"] as? Double)
    }

    func testFailedCallsAreCountedByStatusInTheText() throws {
        let result = try load(
            "yedi.echo.Echo/Echo", #"{"text":"{{random:fail:5:gone}}"}"#, ["-n", "30", "--rate", "1000", "-c", "4"])
        assertExit(result, 0)
        XCTAssertTrue(result.output.contains("4 workers on 1 connection, 1000 calls/s, 30 calls"), result.output)
        XCTAssertTrue(result.output.contains("statuses  NOT_FOUND 30\n"), result.output)
        XCTAssertTrue(result.output.contains("calls     30 in "), result.output)
        for name in ["p50", "p90", "p99", "p99.9", "max"] {
            XCTAssertTrue(result.output.contains(" \(name) "), result.output)
        }
    }

    func testProgressLineWhileItRuns() throws {
        let result = try load("yedi.health.Health/Check", "{}", ["--duration", "2.5", "-c", "2"])
        assertExit(result, 0)
        // One line a second when stderr is not a terminal: `[1 s/2.5 s] 812 calls, 811 calls/s, 0 errors`.
        XCTAssertTrue(result.errorOutput.hasPrefix("["), result.errorOutput)
        XCTAssertTrue(result.errorOutput.contains(" s/2.5 s] "), result.errorOutput)
        XCTAssertTrue(result.errorOutput.contains(" calls/s, 0 errors\n"), result.errorOutput)
        let quiet = try load("yedi.health.Health/Check", "{}", ["--duration", "1.5", "-c", "2", "--no-progress"])
        assertExit(quiet, 0)
        XCTAssertEqual(quiet.errorOutput, "")
    }

    func testVerboseNarratesTheConnectionsAndMetadata() throws {
        let result = try load(
            "yedi.echo.Echo/Echo", #"{"text":"v"}"#,
            ["-n", "5", "--connections", "3", "--verbose", "--no-progress", "-H", "request-id: load-1", "--token", "t"])
        assertExit(result, 0)
        XCTAssertTrue(result.errorOutput.contains("* connecting to \(address) (3 connections, CA "), result.errorOutput)
        XCTAssertTrue(result.errorOutput.contains("* 3 of 3 connected in "), result.errorOutput)
        XCTAssertTrue(result.errorOutput.contains("> request-id: load-1\n"), result.errorOutput)
        XCTAssertTrue(result.errorOutput.contains("> authorization: <redacted>\n"), result.errorOutput)
        XCTAssertTrue(result.output.contains("on 3 connections"), result.output)
    }

    /// Ctrl-C stops the run, cancels the calls in flight on the server, and still prints the report.
    func testInterruptPrintsTheReportSoFarAndExits130() async throws {
        let running = try RunningProcess(
            try ProbeExecutable.require(),
            [
                "load", address, "yedi.echo.Echo/Echo", #"{"text":"hang"}"#, "-c", "3", "--duration", "600",
                "--json", "--no-progress", "--timeout", "600", "--ca", pki.caFile,
            ]
        )
        defer { running.kill() }
        let started = await eventually(timeout: .seconds(30)) { self.service.probe.startedCalls.count == 3 }
        XCTAssertTrue(started, running.errorOutput)
        running.send(SIGINT)
        let result = running.finish(timeout: 30)
        XCTAssertEqual(result.exitCode, 130, result.errorOutput)
        let report = try jsonObject(result.output)
        XCTAssertEqual(report["interrupted"] as? Bool, true)
        XCTAssertEqual(report["statuses"] as? [String: Int], ["CANCELLED": 3])
        let cancelled = await eventually(timeout: .seconds(20)) { self.service.probe.cancelledCalls.count == 3 }
        XCTAssertTrue(cancelled, "the server did not see the calls cancelled")
    }
}

/// Mistakes caught before any connection (the address is a closed port: a probe that tried to connect
/// would exit 4): exit 2 and a message that says what is wrong.
final class ProbeLoadUsageTests: XCTestCase {
    var address = ""
    var pki: TestPKI!

    override func setUp() async throws {
        _ = try ProbeExecutable.require()
        pki = try TestPKI.get()
        address = "127.0.0.1:\(try closedLoopbackPort())"
    }

    func assertUsage(
        _ arguments: [String], _ message: String, request: String = #"{"text": "{{seq}}"}"#,
        method: String = "yedi.echo.Echo/Echo",
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let result = try probe(["load", address, method, request, "--ca", pki.caFile] + arguments)
        assertExit(result, 2, file: file, line: line)
        let first = result.errorOutput.split(separator: "\n").first.map(String.init) ?? ""
        XCTAssertEqual(first, "yedi-probe: \(message)", result.errorOutput, file: file, line: line)
        XCTAssertEqual(result.output, "", file: file, line: line)
    }

    func testBadArgumentsExit2WithAClearMessage() throws {
        try assertUsage(
            ["--duration", "3", "--total", "5"], "--duration and --total both say when to stop: give one of them")
        try assertUsage(["--rate", "0"], "--rate must be a number of calls per second above 0 (and at most 10000000)")
        try assertUsage(["--rate=-2"], "--rate must be a number of calls per second above 0 (and at most 10000000)")
        try assertUsage(
            ["--rate", "nan"], "--rate must be a number of calls per second above 0 (and at most 10000000)")
        try assertUsage(["--duration", "0"], "--duration must be a number of seconds above 0 (and below a year)")
        try assertUsage(["--total", "0"], "--total must be at least 1")
        try assertUsage(["-c", "0"], "--concurrency must be between 1 and 10000")
        try assertUsage(["--connections", "0"], "--connections must be between 1 and 1000")
    }

    func testTemplateMistakesExit2() throws {
        try assertUsage(
            [],
            "the request (the argument): unknown placeholder {{sequence}}: use {{seq}}, {{uuid}} or {{random:a,b,c}}",
            request: #"{"text": "{{sequence}}"}"#)
        try assertUsage(
            [],
            "the request (the argument): placeholders go inside JSON strings (\"{{seq}}\"; integer fields take strings too)",
            request: #"{"text": {{seq}}}"#)
    }

    func testScenarioOrMethodNotBoth() throws {
        for (arguments, message) in [
            (["load"], "load needs HOST:PORT and a method (or --scenario yedi-mix)"),
            (["load", address], "load needs HOST:PORT and a method (or --scenario yedi-mix)"),
            (
                ["load", "--scenario", "yedi-mix", address, "yedi.echo.Echo/Echo"],
                "--scenario takes no HOST:PORT or method: it finds the services with --account, --content, --booking and --chat"
            ),
            (["load", "--scenario", "yedi-mix", "--designers", "0"], "--designers must be between 1 and 100"),
            (["load", "--scenario", "yedi-mix", "--posts", "31"], "--posts must be between 1 and 30"),
            // 2 designers and 3 customers hold at most 16 streams each (ChatService's limit per user).
            (
                ["load", "--scenario", "yedi-mix", "--streams", "81"],
                "--streams 81 needs at least 6 users (ChatService allows 16 streams per user), and --designers plus "
                    + "--customers make 5: raise --customers to 4 or more"
            ),
        ] {
            let result = try probe(arguments + ["--ca", pki.caFile])
            assertExit(result, 2)
            XCTAssertEqual(result.errorOutput.split(separator: "\n").first.map(String.init), "yedi-probe: \(message)")
        }
        let unknown = try probe(["load", "--scenario", "everything", "--ca", pki.caFile])
        assertExit(unknown, 2)
        XCTAssertTrue(unknown.errorOutput.contains("yedi-mix"), unknown.errorOutput)
    }

    func testStreamingMethodsAreRefused() throws {
        try assertUsage(
            [], "load makes unary calls; yedi.echo.Echo/Expand is server-streaming (try `call`)",
            request: "{}", method: "yedi.echo.Echo/Expand")
    }

    func testEveryRandomChoiceMustFitTheMessage() throws {
        let result = try probe([
            "load", address, "yedi.echo.Echo/Echo", #"{"payload": "{{random:AQID,not base64!}}"}"#, "--ca", pki.caFile,
        ])
        assertFailure(result, exit: 7, contains: ["payload"])
    }
}
