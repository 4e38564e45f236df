import Foundation
import RPCCore
import RPCTestSupport
import XCTest
import YediProto

/// `list` and `describe`: what the probe knows from the compiled descriptors, without a server.
final class ProbeSchemaTests: XCTestCase {
    func testListShowsEveryServiceWithKindsAndTypes() throws {
        let result = try probe(["list"])
        assertExit(result, 0)
        for service in YediProtoCatalog.services + RPCCoreCatalog.services {
            XCTAssertTrue(result.output.contains("\(service.fullName)\n"), "\(service.fullName) is not listed")
            for method in service.methods {
                XCTAssertTrue(result.output.contains(method.fullName), "\(method.fullName) is not listed")
            }
        }
        let expand = try XCTUnwrap(result.output.split(separator: "\n").first { $0.contains("yedi.echo.Echo/Expand") })
        XCTAssertTrue(expand.contains("server-streaming"), String(expand))
        XCTAssertTrue(expand.contains("yedi.echo.ExpandRequest -> stream yedi.echo.EchoResponse"), String(expand))
        let echo = try XCTUnwrap(result.output.split(separator: "\n").first { $0.contains("yedi.echo.Echo/Echo ") })
        XCTAssertTrue(echo.contains("unary"), String(echo))
        XCTAssertTrue(echo.contains("yedi.echo.EchoRequest -> yedi.echo.EchoResponse"), String(echo))
    }

    func testListOneService() throws {
        let result = try probe(["list", "yedi.echo.Echo"])
        assertExit(result, 0)
        let lines = result.output.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "yedi.echo.Echo")
        XCTAssertEqual(lines.count, 3, result.output)
        XCTAssertFalse(result.output.contains("AccountService"))
    }

    /// The JSON listing agrees with the generated descriptors on every method's kind and types.
    func testListAsJSON() throws {
        let result = try probe(["list", "--format", "json"])
        assertExit(result, 0)
        let root = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
        let services = try XCTUnwrap(root["services"] as? [[String: Any]])
        var listed: [String: [String: Any]] = [:]
        for service in services {
            for method in try XCTUnwrap(service["methods"] as? [[String: Any]]) {
                listed[try XCTUnwrap(method["fullName"] as? String)] = method
            }
        }
        let generated = (YediProtoCatalog.services + RPCCoreCatalog.services).flatMap(\.methods)
        XCTAssertEqual(Set(listed.keys), Set(generated.map(\.fullName)))
        for method in generated {
            let entry = try XCTUnwrap(listed[method.fullName])
            XCTAssertEqual(entry["kind"] as? String, method.kind.description, method.fullName)
            XCTAssertEqual(entry["requestType"] as? String, method.requestType, method.fullName)
            XCTAssertEqual(entry["responseType"] as? String, method.responseType, method.fullName)
        }
        XCTAssertEqual(listed["yedi.echo.Echo/Echo"]?["idempotency"] as? String, "IDEMPOTENT")
    }

    func testDescribeService() throws {
        let result = try probe(["describe", "yedi.echo.Echo"])
        assertExit(result, 0)
        XCTAssertTrue(result.output.hasPrefix("service yedi.echo.Echo {\n"), result.output)
        XCTAssertTrue(result.output.contains("rpc Echo(yedi.echo.EchoRequest) returns (yedi.echo.EchoResponse);"))
        XCTAssertTrue(
            result.output.contains("rpc Expand(yedi.echo.ExpandRequest) returns (stream yedi.echo.EchoResponse);")
        )
        XCTAssertTrue(result.output.contains("server-streaming"))
    }

    func testDescribeMethodShowsItsTypes() throws {
        for name in ["yedi.echo.Echo/Expand", "yedi.echo.Echo.Expand"] {
            let result = try probe(["describe", name])
            assertExit(result, 0)
            XCTAssertTrue(result.output.contains("returns (stream yedi.echo.EchoResponse);  // server-streaming"))
            XCTAssertFalse(result.output.contains("rpc Echo("), "only the method asked for")
            XCTAssertTrue(result.output.contains("message yedi.echo.ExpandRequest {\n  int64 count = 1;\n"))
            XCTAssertTrue(result.output.contains("  int32 payload_size = 2;\n"))
            XCTAssertTrue(result.output.contains("message yedi.echo.EchoResponse {\n  bytes payload = 1;\n"))
        }
    }

    /// Field numbers, `repeated`, full type names, and each referenced type defined once, nested ones included.
    func testDescribeMessage() throws {
        let result = try probe(["describe", "yedi.account.Designer"])
        assertExit(result, 0)
        let text = result.output
        XCTAssertTrue(text.hasPrefix("message yedi.account.Designer {\n  yedi.account.PublicUser user = 1;\n"), text)
        XCTAssertTrue(text.contains("  repeated string skills = 3;\n"))
        XCTAssertTrue(text.contains("  yedi.account.DesignerRank rank = 4;\n"))
        XCTAssertTrue(text.contains("  yedi.account.ReviewSummary reviews = 5;\n"))
        XCTAssertTrue(text.contains("  int64 follower_count = 6;\n"))
        XCTAssertTrue(text.contains("  yedi.account.Shop shop = 7;\n"))
        // Referenced types, two levels down, each once.
        XCTAssertTrue(text.contains("message yedi.account.ReviewSummary {\n  double rating = 1;\n"))
        XCTAssertTrue(text.contains("message yedi.account.Shop {\n"))
        XCTAssertTrue(text.contains("  repeated yedi.account.MessengerLink messenger_links = 8;\n"))
        XCTAssertTrue(text.contains("message yedi.account.MessengerLink {\n  string kind = 1;\n  string url = 2;\n}"))
        XCTAssertTrue(text.contains("enum yedi.account.DesignerRank {\n  DESIGNER_RANK_UNSPECIFIED = 0;\n"))
        XCTAssertTrue(text.contains("  DESIGNER_RANK_INTERN = 4;\n"))
        for definition in [
            "message yedi.account.PublicUser {", "message yedi.account.Address {", "enum yedi.account.Role {",
        ] {
            XCTAssertEqual(text.components(separatedBy: definition).count - 1, 1, "\(definition) once")
        }
        // Only what is referenced: the public profile has no User (nor its LocalDate).
        XCTAssertFalse(text.contains("message yedi.account.User {"), text)

        // A type of another package (yedi.common), two levels down, with its fields.
        let signUp = try probe(["describe", "yedi.account.CompleteSignUpResponse"])
        assertExit(signUp, 0)
        XCTAssertTrue(signUp.output.contains("  yedi.common.LocalDate birth_date = 7;\n"), signUp.output)
        XCTAssertTrue(signUp.output.contains("message yedi.common.LocalDate {\n  int32 year = 1;\n"), signUp.output)
        XCTAssertEqual(signUp.output.components(separatedBy: "message yedi.common.LocalDate {").count - 1, 1)
    }

    func testDescribeMessageWithNestedEnumAndOneof() throws {
        let health = try probe(["describe", "yedi.health.HealthCheckResponse"])
        assertExit(health, 0)
        XCTAssertTrue(health.output.contains("  yedi.health.HealthCheckResponse.ServingStatus status = 1;\n"))
        XCTAssertTrue(health.output.contains("enum yedi.health.HealthCheckResponse.ServingStatus {\n"))
        XCTAssertTrue(health.output.contains("  SERVING_STATUS_NOT_SERVING = 2;\n"))

        let search = try probe(["describe", "yedi.account.RecentSearch"])
        assertExit(search, 0)
        XCTAssertTrue(
            search.output.contains(
                "  string id = 1;\n  oneof {\n    string query = 2;\n    string designer_id = 3;\n  }\n"
                    + "  int64 searched_at_ms = 4;\n"
            ),
            search.output
        )
    }

    func testDescribeEnum() throws {
        let result = try probe(["describe", "yedi.account.Role"])
        assertExit(result, 0)
        XCTAssertEqual(
            result.output,
            "enum yedi.account.Role {\n  ROLE_UNSPECIFIED = 0;\n  ROLE_CUSTOMER = 1;\n  ROLE_DESIGNER = 2;\n}\n"
        )
    }

    func testDescribeUnknownNameSuggests() throws {
        assertFailure(
            try probe(["describe", "yedi.account.Desginer"]),
            exit: 5,
            contains: ["yedi.account.Desginer", "did you mean yedi.account.Designer?"]
        )
        assertFailure(try probe(["describe", "EchoRequest"]), exit: 5, contains: ["yedi.echo.EchoRequest"])
        assertFailure(try probe(["list", "yedi.echo.Ehco"]), exit: 5, contains: ["did you mean yedi.echo.Echo?"])
    }

    func testHelpDocumentsTheExitStatuses() throws {
        let result = try probe(["--help"])
        assertExit(result, 0)
        for line in ["Exit status:", "2        bad command-line usage", "3        TLS failure", "10+CODE", "130"] {
            XCTAssertTrue(result.output.contains(line), "--help lacks \"\(line)\"")
        }
        let call = try probe(["call", "--help"])
        assertExit(call, 0)
        for option in [
            "--ca", "--cert", "--key", "--server-name", "--token", "-H", "--timeout", "--verbose", "--format",
        ] {
            XCTAssertTrue(call.output.contains(option), "call --help lacks \(option)")
        }
    }
}
