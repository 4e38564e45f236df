import Foundation
import RPCTestSupport
import XCTest

/// Mistakes caught before any connection: names, JSON, files, usage. Each is one line on stderr with its
/// own exit status; none reaches the network (the address is a closed port, so a probe that tried to
/// connect would exit 4 instead).
final class ProbeInputErrorTests: XCTestCase {
    var pki: TestPKI!
    var address = ""

    override func setUp() async throws {
        _ = try ProbeExecutable.require()
        pki = try TestPKI.get()
        address = "127.0.0.1:\(try closedLoopbackPort())"
    }

    func call(_ method: String, _ request: String? = nil, input: String? = nil) throws -> ProcessResult {
        try probe(["call", address, method] + (request.map { [$0] } ?? []) + ["--ca", pki.caFile], input: input)
    }

    func testUnknownMethodSuggestsTheClosest() throws {
        assertFailure(
            try call("yedi.echo.Echo/Ecko"),
            exit: 5,
            contains: ["unknown method \"yedi.echo.Echo/Ecko\"", "did you mean yedi.echo.Echo/Echo?"]
        )
        assertFailure(try call("Echo/Expand"), exit: 5, contains: ["did you mean yedi.echo.Echo/Expand?"])
        assertFailure(try call("yedi.echo.Ehco/Echo"), exit: 5, contains: ["did you mean yedi.echo.Echo/Echo?"])
        assertFailure(
            try call("yedi.echo.Echo"),
            exit: 5,
            contains: ["yedi.echo.Echo is a service", "yedi.echo.Echo/Echo, yedi.echo.Echo/Expand"]
        )
        assertFailure(try call("nothing.like.It/AtAll"), exit: 5, contains: ["yedi-probe list"])
    }

    func testJSONSyntaxErrorGivesLineAndColumn() throws {
        assertFailure(
            try call("yedi.echo.Echo/Echo", "{\n  \"text\": \"a\",\n  \"payload\": AQID\n}"),
            exit: 6,
            contains: ["invalid JSON in the argument at 3:14"]
        )
        assertFailure(
            try call("yedi.echo.Echo/Echo", "-", input: "{\"text\": \"a\",}"), exit: 6, contains: ["stdin at 1:"])
    }

    func testUnknownFieldNamesItsPath() throws {
        assertFailure(
            try call("yedi.account.AccountService/UpdateShop", #"{"shop": {"nmae": "예디 헤어"}}"#),
            exit: 7,
            contains: ["shop.nmae", "unknown field of yedi.account.Shop", "did you mean \"name\"?", "1:11"]
        )
        assertFailure(try call("yedi.echo.Echo/Echo", #"{"txet": "x"}"#), exit: 7, contains: ["txet"])
    }

    func testWrongTypeNamesItsPath() throws {
        assertFailure(
            try call("yedi.echo.Echo/Expand", #"{"count": "many"}"#),
            exit: 7,
            contains: ["count:", "yedi.echo.ExpandRequest"]
        )
        assertFailure(
            try call("yedi.account.AccountService/SearchDesigners", #"{"query": "펌", "page": {"limit": true}}"#),
            exit: 7,
            contains: ["page.limit: expected"]
        )
        assertFailure(try call("yedi.echo.Echo/Echo", #"{"payload": "not base64!"}"#), exit: 7, contains: ["payload"])
        assertFailure(try call("yedi.echo.Echo/Echo", "[1, 2]"), exit: 7, contains: ["expected an object"])
    }

    func testUnreadableFile() throws {
        assertFailure(
            try call("yedi.echo.Echo/Echo", "@/nonexistent/request.json"),
            exit: 8,
            contains: ["cannot read @/nonexistent/request.json: No such file or directory"]
        )
        assertFailure(try call("yedi.echo.Echo/Echo", "@/"), exit: 8, contains: ["Is a directory"])
    }

    func testBadUsage() throws {
        for arguments in [
            ["call"],
            ["call", address],
            ["call", "no-port", "yedi.echo.Echo/Echo"],
            ["call", address, "yedi.echo.Echo/Echo", "--bogus"],
            ["call", address, "yedi.echo.Echo/Echo", "--format", "xml"],
            ["call", address, "yedi.echo.Echo/Echo", "--timeout", "-1"],
            ["call", address, "yedi.echo.Echo/Echo", "-H", "no colon"],
            ["call", address, "yedi.echo.Echo/Echo", "--cert", "x.pem"],
            ["call", address, "yedi.echo.Echo/Echo", "{}", "extra"],
            ["frobnicate"],
            ["describe"],
        ] {
            let result = try probe(arguments)
            assertExit(result, 2)
            XCTAssertTrue(result.errorOutput.hasPrefix("yedi-probe: "), "\(arguments): \(result.errorOutput)")
            XCTAssertEqual(result.output, "", "\(arguments)")
        }
    }

    func testMissingCAFile() throws {
        assertFailure(
            try probe(["call", address, "yedi.echo.Echo/Echo", "--ca", "/nonexistent/ca.pem"]),
            exit: 3,
            contains: ["--ca", "/nonexistent/ca.pem"]
        )
        // Without --ca the probe looks for the dev PKI in the current directory.
        guard !FileManager.default.fileExists(atPath: "deploy/pki/ca.pem") else { return }
        assertFailure(
            try probe(["call", address, "yedi.echo.Echo/Echo"]),
            exit: 2,
            contains: ["--ca FILE", "deploy/dev-pki.sh"]
        )
    }
}
