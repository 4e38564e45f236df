import ArgumentParser
import Foundation
import Logging
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest

/// Every option from its flag and from its `YEDI_…` variable; bad values fail naming the option.
final class ConfigurationTests: XCTestCase {
    private let defaults = ServiceDefaults(
        name: "content", port: 7002, metricsPort: 9102, maxFrameBytes: 11 << 20, peers: ["account", "booking"])

    private func resolve(_ arguments: [String], _ environment: [String: String] = [:]) throws -> ServiceConfiguration {
        let options = try ServiceOptions.parse(arguments)
        return try ServiceConfiguration.resolve(options: options, environment: environment, defaults: defaults)
    }

    private func resolveError(_ arguments: [String], _ environment: [String: String] = [:]) -> ConfigurationError? {
        do {
            _ = try resolve(arguments, environment)
            return nil
        } catch {
            return error as? ConfigurationError
        }
    }

    func testDefaults() throws {
        let configuration = try resolve([])
        XCTAssertEqual(configuration.name, "content")
        XCTAssertEqual(configuration.host, "127.0.0.1")
        XCTAssertEqual(configuration.port, 7002)
        XCTAssertEqual(configuration.metricsPort, 9102)
        XCTAssertEqual(configuration.dataDirectory, "data/content")
        func inPKI(_ file: String) -> String { URL(fileURLWithPath: "deploy/pki").appendingPathComponent(file).path }
        XCTAssertEqual(configuration.certificateFile, inPKI("content.pem"))
        XCTAssertEqual(configuration.privateKeyFile, inPKI("content.key"))
        XCTAssertEqual(configuration.caFile, inPKI("ca.pem"))
        XCTAssertEqual(configuration.tokenPublicKeyFiles, [inPKI("token-signing.pub.pem")])
        XCTAssertEqual(configuration.tokenSigningKeyFile, inPKI("token-signing.key"))
        XCTAssertEqual(configuration.peers["account"], [.init(host: "127.0.0.1", port: 7001)])
        XCTAssertEqual(configuration.peers["booking"], [.init(host: "127.0.0.1", port: 7003)])
        XCTAssertNil(configuration.peers["chat"], "only the peers the service calls")
        XCTAssertEqual(configuration.imageCacheItems, 50)
        XCTAssertEqual(configuration.textCacheItems, 1_000)
        XCTAssertEqual(configuration.maxFrameBytes, 11 << 20)
        XCTAssertEqual(configuration.logLevel, .info)
        XCTAssertEqual(configuration.shutdownGrace, .seconds(10))
        XCTAssertFalse(configuration.devClock)
    }

    /// One row per option: the flag, the variable, a good value, how to read it back, a bad value.
    private struct OptionCase {
        var flag: String
        var variable: String
        var value: String
        var read: (ServiceConfiguration) -> String
        var bad: String?
    }

    private var cases: [OptionCase] {
        [
            OptionCase(flag: "--host", variable: "YEDI_HOST", value: "0.0.0.0", read: { $0.host }, bad: ""),
            OptionCase(flag: "--port", variable: "YEDI_PORT", value: "8443", read: { "\($0.port)" }, bad: "80a"),
            OptionCase(
                flag: "--metrics-port", variable: "YEDI_METRICS_PORT", value: "9999", read: { "\($0.metricsPort)" },
                bad: "70000"),
            OptionCase(
                flag: "--data", variable: "YEDI_DATA", value: "/var/lib/yedi", read: { $0.dataDirectory }, bad: ""),
            OptionCase(
                flag: "--pki", variable: "YEDI_PKI", value: "/etc/yedi", read: { $0.caFile },
                bad: nil),
            OptionCase(flag: "--cert", variable: "YEDI_CERT", value: "/c.pem", read: { $0.certificateFile }, bad: nil),
            OptionCase(flag: "--key", variable: "YEDI_KEY", value: "/c.key", read: { $0.privateKeyFile }, bad: nil),
            OptionCase(flag: "--ca", variable: "YEDI_CA", value: "/ca.pem", read: { $0.caFile }, bad: nil),
            OptionCase(
                flag: "--token-public-keys", variable: "YEDI_TOKEN_PUBLIC_KEYS", value: "/k1.pem,/k2.pem",
                read: { $0.tokenPublicKeyFiles.joined(separator: ",") }, bad: "/k1.pem,,"),
            OptionCase(
                flag: "--token-signing-key", variable: "YEDI_TOKEN_SIGNING_KEY", value: "/s.key",
                read: { $0.tokenSigningKeyFile }, bad: nil),
            OptionCase(
                flag: "--peer", variable: "YEDI_PEERS", value: "account=10.0.0.5:7001,10.0.0.6:7001",
                read: { "account=" + ($0.peers["account"] ?? []).map(\.description).joined(separator: ",") },
                bad: "account=10.0.0.5"),
            OptionCase(
                flag: "--image-cache-items", variable: "YEDI_IMAGE_CACHE_ITEMS", value: "7",
                read: { "\($0.imageCacheItems)" }, bad: "0"),
            OptionCase(
                flag: "--text-cache-items", variable: "YEDI_TEXT_CACHE_ITEMS", value: "12",
                read: { "\($0.textCacheItems)" }, bad: "lots"),
            OptionCase(
                flag: "--max-frame-bytes", variable: "YEDI_MAX_FRAME_BYTES", value: "1048576",
                read: { "\($0.maxFrameBytes)" }, bad: "12"),
            OptionCase(
                flag: "--log-level", variable: "YEDI_LOG_LEVEL", value: "debug", read: { $0.logLevel.rawValue },
                bad: "loud"),
            OptionCase(
                flag: "--shutdown-grace", variable: "YEDI_SHUTDOWN_GRACE", value: "2.5",
                read: { "\($0.shutdownGrace)" }, bad: "soon"),
            .init(
                flag: "--sign-in-rate-per-address", variable: "YEDI_SIGN_IN_RATE_PER_ADDRESS", value: "5/30",
                read: { "\($0.signInRatePerAddress)" }, bad: "5 per minute"),
            .init(
                flag: "--sign-in-rate-per-connection", variable: "YEDI_SIGN_IN_RATE_PER_CONNECTION", value: "3/10",
                read: { "\($0.signInRatePerConnection)" }, bad: "0/60"),
            .init(
                flag: "--quota", variable: "YEDI_QUOTAS", value: "reservations.open=3",
                read: { "\($0.quotas.reservationsOpen.limit)" }, bad: "reservations.forever=3"),
            .init(
                flag: "--retention", variable: "YEDI_RETENTION", value: "chat.events=48",
                read: { "\($0.retention.chatEvents)" }, bad: "chat.events=-1"),
        ]
    }

    func testEachOptionFromItsFlagAndFromTheEnvironment() throws {
        let defaults = try resolve([])
        for option in cases {
            let fromFlag = try resolve([option.flag, option.value])
            let fromEnvironment = try resolve([], [option.variable: option.value])
            XCTAssertEqual(option.read(fromFlag), option.read(fromEnvironment), option.flag)
            XCTAssertNotEqual(option.read(fromFlag), option.read(defaults), "\(option.flag) changed nothing")
        }
        XCTAssertEqual(try resolve(["--pki", "/etc/yedi"]).caFile, "/etc/yedi/ca.pem")
        XCTAssertEqual(try resolve(["--shutdown-grace", "2.5"]).shutdownGrace, .milliseconds(2_500))
        XCTAssertTrue(try resolve(["--development", "--dev-clock"]).devClock)
        XCTAssertTrue(try resolve([], ["YEDI_DEVELOPMENT": "1", "YEDI_DEV_CLOCK": "1"]).devClock)
        XCTAssertTrue(try resolve([], ["YEDI_DEVELOPMENT": "1"]).development)
        XCTAssertFalse(try resolve([]).development)
    }

    /// The documented defaults; several entries from the variable; a bad one names the quota or period.
    func testQuotasAndRetention() throws {
        let defaults = try resolve([])
        XCTAssertEqual(defaults.quotas.reservationsOpen.limit, 5)
        XCTAssertEqual(defaults.quotas.reservationsPerDay.limit, 10)
        XCTAssertEqual(defaults.quotas.reviewsPerDay.limit, 20)
        XCTAssertEqual(defaults.quotas.roomsPerDay.limit, 50)
        XCTAssertEqual(defaults.quotas.postsPerDay.limit, 30)
        XCTAssertEqual(defaults.quotas.uploadBytesPerDay.limit, 200 << 20)
        XCTAssertEqual(defaults.quotas.uploadBytesTotal.limit, 2 << 30)
        XCTAssertEqual(defaults.retention.unreferencedImages, 24 * 3_600_000)
        XCTAssertEqual(defaults.retention.chatEvents, 7 * 24 * 3_600_000)
        XCTAssertEqual(defaults.retention.deadSessions, 24 * 3_600_000)
        XCTAssertEqual(
            defaults.quotas.reservationsOpen.description, "quota reservations.open: at most 5 upcoming reservations")

        let set = try resolve(
            [], ["YEDI_QUOTAS": "posts.day=1; reviews.day=0", "YEDI_RETENTION": "images.unreferenced=0.5"])
        XCTAssertEqual(set.quotas.postsPerDay.limit, 1)
        XCTAssertEqual(set.quotas.reviewsPerDay.limit, 0)
        XCTAssertEqual(set.quotas.roomsPerDay.limit, 50, "the others keep their defaults")
        XCTAssertEqual(set.retention.unreferencedImages, 1_800_000)

        XCTAssertTrue(resolveError(["--quota", "posts.day=many"])?.problem.contains("posts.day=many") ?? false)
        XCTAssertTrue(resolveError(["--quota", "posts"])?.problem.contains("NAME=VALUE") ?? false)
        XCTAssertTrue(resolveError(["--retention", "mail=3"])?.problem.contains("\"mail\" is not") ?? false)
    }

    func testAFlagWinsOverTheEnvironment() throws {
        XCTAssertEqual(try resolve(["--port", "1234"], ["YEDI_PORT": "5678"]).port, 1234)
        let peers = try resolve(["--peer", "booking=b:1"], ["YEDI_PEERS": "booking=a:1"]).peers["booking"]
        XCTAssertEqual(peers, [.init(host: "b", port: 1)])
    }

    func testSeveralPeersFromTheEnvironment() throws {
        let configuration = try resolve([], ["YEDI_PEERS": "account=a1:7001,a2:7001; booking=b:7003"])
        XCTAssertEqual(configuration.peers["account"], [.init(host: "a1", port: 7001), .init(host: "a2", port: 7001)])
        XCTAssertEqual(configuration.peers["booking"], [.init(host: "b", port: 7003)])
    }

    func testABadValueNamesTheOptionFromEitherSource() throws {
        for option in cases {
            guard let bad = option.bad else { continue }
            let fromFlag = resolveError([option.flag, bad])
            let fromEnvironment = resolveError([], [option.variable: bad])
            XCTAssertNotNil(fromFlag, "\(option.flag) \(bad) was accepted")
            XCTAssertEqual(fromFlag, fromEnvironment, option.flag)
            let expectedName = "\(option.flag) (\(option.variable))"
            XCTAssertEqual(fromFlag?.option, expectedName)
            XCTAssertFalse(fromFlag?.problem.isEmpty ?? true)
        }
        XCTAssertEqual(resolveError([], ["YEDI_DEV_CLOCK": "maybe"])?.option, "--dev-clock (YEDI_DEV_CLOCK)")
        XCTAssertEqual(resolveError(["--peer", "payments=p:1"])?.option, "--peer (YEDI_PEERS)")
    }

    /// The real executable: a bad value stops the start with a message naming the option, exit non-zero.
    func testTheExecutableRefusesABadValueAtStart() throws {
        let binary = try BuiltProducts.path("ChatService")
        let fromFlag = try ProcessRunner.run(binary, ["--port", "seventy"], timeout: 30)
        XCTAssertNotEqual(fromFlag.exitCode, 0)
        XCTAssertTrue(fromFlag.errorOutput.contains("--port (YEDI_PORT)"), fromFlag.combinedOutput)
        let fromEnvironment = try ProcessRunner.run(
            "/usr/bin/env", ["YEDI_LOG_LEVEL=loud", binary], timeout: 30)
        XCTAssertNotEqual(fromEnvironment.exitCode, 0)
        XCTAssertTrue(
            fromEnvironment.errorOutput.contains("--log-level (YEDI_LOG_LEVEL)"), fromEnvironment.combinedOutput)
        let help = try ProcessRunner.run(binary, ["--help"], timeout: 30)
        XCTAssertEqual(help.exitCode, 0)
        for variable in ["YEDI_PORT", "YEDI_PEERS", "YEDI_TOKEN_PUBLIC_KEYS", "YEDI_MAX_FRAME_BYTES", "YEDI_DEV_CLOCK"]
        {
            XCTAssertTrue(help.output.contains(variable), "--help does not mention \(variable)")
        }
    }
}
