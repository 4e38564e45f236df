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

    /// `deploy/install.sh --plan`: the owners and modes install.sh sets, as `PATH OWNER GROUP MODE` lines.
    private static func installPlan(_ arguments: [String] = []) throws -> [String: [String]] {
        let output = try run("deploy/install.sh", ["--plan"] + arguments)
        var plan: [String: [String]] = [:]
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ").map(String.init)
            XCTAssertEqual(fields.count, 4, String(line))
            plan[fields[0]] = Array(fields.dropFirst())
        }
        return plan
    }

    func testEachServiceReadsOnlyItsOwnKeyAndOnlyAccountTheSigningKey() throws {
        let plan = try Self.installPlan()
        for (name, _) in Self.services {
            XCTAssertEqual(plan["/etc/yedi/pki/\(name).key"], ["root", "yedi-\(name)", "0640"], name)
            XCTAssertEqual(plan["/etc/yedi/\(name).env"], ["root", "yedi-\(name)", "0640"], name)
            XCTAssertEqual(plan["/etc/yedi/pki/\(name).pem"], ["root", "yedi", "0644"], name)
        }
        XCTAssertEqual(plan["/etc/yedi/pki/token-signing.key"], ["root", "yedi-account", "0640"])
        // Shared by every service (the group `yedi`): the CA, the token public key, the log key.
        XCTAssertEqual(plan["/etc/yedi/pki/ca.pem"], ["root", "yedi", "0644"])
        XCTAssertEqual(plan["/etc/yedi/pki/token-signing.pub.pem"], ["root", "yedi", "0644"])
        XCTAssertEqual(plan["/etc/yedi/pki/log.key"], ["root", "yedi", "0640"])
        XCTAssertEqual(plan["/etc/yedi/pki"], ["root", "yedi", "0750"])
        for (path, entry) in plan where path.hasSuffix(".key") && path != "/etc/yedi/pki/log.key" {
            XCTAssertNotEqual(entry[1], "yedi", "\(path): no private key is readable by every service")
        }
        // A host running only BookingService gets no signing key and no other service's key.
        let booking = try Self.installPlan(["booking"])
        XCTAssertNil(booking["/etc/yedi/pki/token-signing.key"])
        XCTAssertEqual(
            booking.keys.filter { $0.hasSuffix(".key") }.sorted(),
            [
                "/etc/yedi/pki/booking.key", "/etc/yedi/pki/log.key",
            ])
    }

    func testTheUnitRunsEachServiceAsItsOwnUserWithPrivateData() throws {
        let unit = try String(
            contentsOf: Self.repository.appendingPathComponent("deploy/systemd/yedi@.service"), encoding: .utf8)
        let lines = Set(unit.split(separator: "\n").map(String.init))
        for setting in [
            "User=yedi-%i", "Group=yedi-%i", "SupplementaryGroups=yedi", "StateDirectory=yedi/%i",
            "StateDirectoryMode=0700", "UMask=0077",
        ] {
            XCTAssertTrue(lines.contains(setting), "yedi@.service lacks \(setting)")
        }
        XCTAssertFalse(lines.contains("User=yedi"), "no shared user")
        let journald = try String(
            contentsOf: Self.repository.appendingPathComponent("deploy/journald/yedi.conf"), encoding: .utf8)
        XCTAssertTrue(journald.contains("MaxRetentionSec=30day"), "log retention is shipped")
        let install = try String(
            contentsOf: Self.repository.appendingPathComponent("deploy/install.sh"), encoding: .utf8)
        XCTAssertTrue(install.contains("/etc/systemd/journald.conf.d/yedi.conf"), "install.sh installs it")
    }

    func testReplicasOnPostgresGetTheirOwnSettingsFilesAndShareTheServicesSecrets() throws {
        let plan = try Self.installPlan(["--replicas", "3"])
        for (name, _) in Self.services {
            for n in 1...3 {
                XCTAssertEqual(plan["/etc/yedi/\(name)-\(n).env"], ["root", "yedi-\(name)", "0640"], "\(name)-\(n)")
            }
            XCTAssertNil(plan["/etc/yedi/\(name)-4.env"], "three replicas, not four")
            XCTAssertEqual(
                plan["/etc/yedi/pki/\(name).database-password"], ["root", "yedi-\(name)", "0640"],
                "\(name)'s database password: its replicas alone read it")
        }
        // ContentService's replicas sign image URLs with one key, which the other services do not read.
        XCTAssertEqual(plan["/etc/yedi/pki/image-url.key"], ["root", "yedi-content", "0640"])
        XCTAssertNil(try Self.installPlan(["--replicas", "3", "booking"])["/etc/yedi/pki/image-url.key"])
        XCTAssertNil(try Self.installPlan()["/etc/yedi/account-1.env"], "no replica files without --replicas")
    }

    /// What install.sh writes as replica n's settings, read after the service's file (systemd reads the
    /// unit's EnvironmentFile lines in order, a later value winning), gives each replica its own ports
    /// and name.
    func testEachReplicasSettingsResolveToItsOwnPortsAndName() throws {
        for (name, defaults) in Self.services {
            let path = Self.repository.appendingPathComponent("deploy/env/\(name).env").path
            let shared = try Self.parseEnvironmentFile(path)
            var ports: Set<Int> = []
            for n in 1...3 {
                let replicaFile = FileManager.default.temporaryDirectory
                    .appendingPathComponent("\(name)-\(n)-\(UUID().uuidString).env").path
                defer { try? FileManager.default.removeItem(atPath: replicaFile) }
                try Self.run("deploy/install.sh", ["--replica-env", path, name, "\(n)"])
                    .write(toFile: replicaFile, atomically: true, encoding: .utf8)
                let variables = shared.merging(try Self.parseEnvironmentFile(replicaFile)) { _, replica in replica }
                var options = try ServiceOptions.parse([])
                options.data = "/var/lib/yedi/\(name)-\(n)"
                let configuration = try ServiceConfiguration.resolve(
                    options: options, environment: variables, defaults: defaults)
                XCTAssertEqual(configuration.port, Int(shared["YEDI_PORT"] ?? "")! + 10 * (n - 1), "\(name)-\(n)")
                XCTAssertEqual(
                    configuration.metricsPort, Int(shared["YEDI_METRICS_PORT"] ?? "")! + 10 * (n - 1), "\(name)-\(n)")
                XCTAssertTrue(configuration.replica.hasPrefix("\(name)-\(n)@"), configuration.replica)
                XCTAssertEqual(variables["YEDI_DATA"], "/var/lib/yedi/\(name)-\(n)", "a state folder per replica")
                if let images = configuration.images {
                    XCTAssertEqual(images.port, Int(shared["YEDI_IMAGE_PORT"] ?? "")! + 10 * (n - 1))
                    ports.insert(images.port)
                }
                ports.formUnion([configuration.port, configuration.metricsPort])
            }
            XCTAssertEqual(ports.count, defaults.imagePort == nil ? 6 : 9, "\(name): no two replicas share a port")
        }
    }

    /// Every port a service's file sets moves with the replica (the payment webhook's too), quoted or
    /// not, its last value winning as in systemd; a file without YEDI_PORT is refused.
    func testEveryPortOfTheServicesFileMovesWithTheReplica() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("booking-\(UUID().uuidString).env")
        defer { try? FileManager.default.removeItem(at: file) }
        try "YEDI_PORT=7001\nYEDI_PORT=\"7003\"\nYEDI_PAYMENT_WEBHOOK_PORT=\"9203\"\n# YEDI_METRICS_PORT=1\n".write(
            to: file, atomically: true, encoding: .utf8)
        let settings = try Self.run("deploy/install.sh", ["--replica-env", file.path, "booking", "2"])
        let lines = Set(settings.split(separator: "\n").map(String.init))
        XCTAssertTrue(lines.isSuperset(of: ["YEDI_PORT=7013", "YEDI_PAYMENT_WEBHOOK_PORT=9213"]), settings)
        XCTAssertFalse(settings.contains("METRICS"), "a commented line is no setting")
        try "YEDI_METRICS_PORT=9103\n".write(to: file, atomically: true, encoding: .utf8)
        XCTAssertEqual(try Self.run("deploy/install.sh", ["--replica-env", file.path, "booking", "2"], status: 1), "")
    }

    /// The replica unit is yedi@.service with the service taken from the unit's name (%j) and the
    /// replica's number as the instance: the same hardening, line for line, its own user per service and
    /// its own state folder per replica.
    func testTheReplicaUnitKeepsTheSingleUnitsHardening() throws {
        func lines(_ file: String) throws -> [String] {
            try String(contentsOf: Self.repository.appendingPathComponent(file), encoding: .utf8)
                .split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") }
        }
        let single = try lines("deploy/systemd/yedi@.service")
        let replica = try lines("deploy/systemd/yedi-replica@.service")
        let hardening = single[single.firstIndex(of: "UMask=0077")!...]
        XCTAssertEqual(Array(hardening), Array(replica[replica.firstIndex(of: "UMask=0077")!...]))
        let sameAsSingle = single.filter { !$0.contains("%i") && !$0.hasPrefix("Description=") }
        XCTAssertEqual(Set(sameAsSingle).subtracting(replica), [], "every other setting of yedi@.service")
        for setting in [
            "User=yedi-%j", "Group=yedi-%j", "StateDirectory=yedi/%j-%i", "ExecStart=/opt/yedi/bin/yedi-%j",
        ] {
            XCTAssertTrue(replica.contains(setting), setting)
        }
        let environmentFiles = replica.filter { $0.hasPrefix("EnvironmentFile=") }
        XCTAssertEqual(environmentFiles, ["EnvironmentFile=/etc/yedi/%j.env", "EnvironmentFile=/etc/yedi/%j-%i.env"])
        let install = try String(
            contentsOf: Self.repository.appendingPathComponent("deploy/install.sh"), encoding: .utf8)
        XCTAssertTrue(
            install.contains("deploy/systemd/yedi-replica@.service \"/etc/systemd/system/yedi-$service@.service\""),
            "installed once per service, so that %j names the service")
    }

    /// Runs a script of the repository and returns its standard output; fails the test unless it exits with
    /// `status`.
    private static func run(_ script: String, _ arguments: [String], status: Int32 = 0) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [repository.appendingPathComponent(script).path] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, status, "\(script) \(arguments)")
        return String(decoding: data, as: UTF8.self)
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
