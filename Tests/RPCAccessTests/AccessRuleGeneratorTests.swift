import Foundation
import RPCAccess
import RPCTestSupport
import XCTest

/// proto/generator/swiftgen.py refuses a method without an access rule, naming it, so no RPC ships
/// without a decision; and it emits the declared rule into the method descriptor.
final class AccessRuleGeneratorTests: XCTestCase {
    func testAMethodWithoutAnAccessRuleFailsGenerationNamingIt() throws {
        let result = try generate(options: "")
        XCTAssertNotEqual(result.exitCode, 0)
        XCTAssertTrue(
            result.errorOutput.contains(
                "proto/x.proto: yedi.x.S/M declares no access rule: add option (yedi.rpc.access) ="),
            result.combinedOutput)
    }

    func testAnUnspecifiedAccessRuleFailsGeneration() throws {
        let result = try generate(options: "option (yedi.rpc.access) = ACCESS_UNSPECIFIED;")
        XCTAssertNotEqual(result.exitCode, 0)
        XCTAssertTrue(result.errorOutput.contains("yedi.x.S/M declares no access rule"), result.combinedOutput)
    }

    func testServiceCallersOnANonServiceMethodFailsGeneration() throws {
        let result = try generate(
            options: #"option (yedi.rpc.access) = USER; option (yedi.rpc.service_callers) = "account";"#)
        XCTAssertNotEqual(result.exitCode, 0)
        XCTAssertTrue(
            result.errorOutput.contains("proto/x.proto: yedi.x.S/M: service_callers is for SERVICE methods only"),
            result.combinedOutput)
    }

    func testTheDeclaredRuleIsGenerated() throws {
        let result = try generate(
            options: #"""
                option (yedi.rpc.access) = SERVICE;
                option (yedi.rpc.service_callers) = "chat";
                option (yedi.rpc.service_callers) = "account";
                """#)
        XCTAssertEqual(result.exitCode, 0, result.combinedOutput)
        let swift = try String(contentsOf: output.appendingPathComponent("Test/Generated/x.pb.swift"), encoding: .utf8)
        XCTAssertTrue(swift.contains(#"access: .service(callers: ["account", "chat"]))"#), swift)
    }

    private var scratch: URL!
    private var output: URL { scratch.appendingPathComponent("sources") }

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("swiftgen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: scratch.appendingPathComponent("c/include"), withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Runs protoc and the generator as proto/generate.sh does, on a file whose one method has `options`.
    private func generate(options: String) throws -> ProcessResult {
        let proto = """
            syntax = "proto3";
            package yedi.x;
            import "access.proto";
            message Empty {}
            service S {
              rpc M(Empty) returns (Empty) {
                \(options)
              }
            }
            """
        try proto.write(to: scratch.appendingPathComponent("x.proto"), atomically: true, encoding: .utf8)
        let root = RepositoryPaths.root
        let descriptors = scratch.appendingPathComponent("descriptors.pb").path
        try ProcessRunner.run(
            "/usr/bin/protoc",
            [
                "-I", scratch.path, "-I", root.appendingPathComponent("proto").path, "--include_imports",
                "--include_source_info", "--descriptor_set_out=\(descriptors)", "x.proto",
            ],
            timeout: 60
        ).requireSuccess()
        return try ProcessRunner.run(
            "/usr/bin/python3",
            [
                root.appendingPathComponent("proto/generator/swiftgen.py").path, "--descriptors", descriptors,
                "--c-target", scratch.appendingPathComponent("c").path, "--sources", output.path,
                "--module", "Test=x.proto",
            ],
            timeout: 60
        )
    }
}
