import Foundation
import ServiceRuntime
import XCTest

@testable import AccountService
@testable import BookingService
@testable import ChatService
@testable import ContentService

/// The example environment files in deploy/env are real configurations: every variable is one the
/// services read, each file resolves for its service, names every peer that service calls, and the set
/// shows replicas (a peer with several addresses).
final class DeploymentFilesTests: XCTestCase {
    private static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private static let services: [(file: String, defaults: ServiceDefaults)] = [
        ("account", AccountServiceDefinition.defaults),
        ("content", ContentServiceDefinition.defaults),
        ("booking", BookingServiceDefinition.defaults),
        ("chat", ChatServiceDefinition.defaults),
    ]

    func testEveryExampleEnvironmentFileResolvesForItsService() throws {
        // The variables the services read, as their --help names them: "(YEDI_PORT; default ...)".
        let help = ServiceOptions.helpMessage(columns: 500)
        let known = Set(help.matches(of: /YEDI_[A-Z_]+/).map { String($0.output) })
        XCTAssertTrue(known.isSuperset(of: ["YEDI_PORT", "YEDI_PEERS", "YEDI_CERT"]), "help parsed: \(known)")

        var replicated = false
        for (name, defaults) in Self.services {
            let path = Self.repository.appendingPathComponent("deploy/env/\(name).env").path
            let variables = try Self.parseEnvironmentFile(path)
            let unknown = Set(variables.keys).subtracting(known)
            XCTAssertTrue(unknown.isEmpty, "\(name).env: no service reads \(unknown.sorted())")

            var options = try ServiceOptions.parse([])
            options.data = "/var/lib/yedi/\(name)"
            let configuration = try ServiceConfiguration.resolve(
                options: options, environment: variables, defaults: defaults)
            XCTAssertEqual(configuration.port, Int(variables["YEDI_PORT"] ?? ""), name)
            XCTAssertEqual(configuration.metricsPort, Int(variables["YEDI_METRICS_PORT"] ?? ""), name)
            XCTAssertEqual(configuration.certificateFile, variables["YEDI_CERT"], name)
            XCTAssertEqual(configuration.privateKeyFile, variables["YEDI_KEY"], name)
            XCTAssertEqual(
                Set(configuration.peers.keys), Set(defaults.peers), "\(name).env names exactly the peers it calls")
            XCTAssertFalse(
                configuration.peers.values.joined().contains { $0.host == "127.0.0.1" }, "peers on other hosts")
            replicated = replicated || configuration.peers.values.contains { $0.count > 1 }
        }
        XCTAssertTrue(replicated, "at least one example shows a peer with several replicas")
    }

    /// systemd's EnvironmentFile syntax as these files use it: KEY=VALUE, optional double quotes, comments.
    private static func parseEnvironmentFile(_ path: String) throws -> [String: String] {
        var variables: [String: String] = [:]
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty, !text.hasPrefix("#"), let equals = text.firstIndex(of: "=") else { continue }
            var value = String(text[text.index(after: equals)...])
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            variables[String(text[..<equals])] = value
        }
        return variables
    }
}
