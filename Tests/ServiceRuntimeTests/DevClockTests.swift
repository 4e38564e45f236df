import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import ChatService

/// A development process's clock moves forward on request, and only in a process started with
/// `--dev-clock`.
final class DevClockTests: XCTestCase {
    func testTheClockMovesOnlyWhenTheProcessWasStartedWithTheFlag() async throws {
        let harness = try ServiceHarness()
        let clock = ManualClock()
        let plain = try await harness.start(
            ChatServiceDefinition.self, configuration: try harness.configuration(ChatServiceDefinition.defaults),
            clock: clock)
        let refused = await statusCode {
            try await withRPCClient(
                configuration: harness.clientConfiguration(port: try await plain.port, identity: "operator")
            ) { client in
                _ = try await YediRuntime.DevClock.Client(client).advanceClock(.init(seconds: 3_600))
            }
        }
        XCTAssertEqual(refused, .failedPrecondition)
        XCTAssertEqual(plain.environment.clock.now, clock.now, "a process without the flag keeps its clock")
        try await plain.stop()

        let development = try await harness.start(
            ChatServiceDefinition.self,
            configuration: try harness.configuration(ChatServiceDefinition.defaults) {
                $0.development = true
                $0.devClock = true
            },
            clock: clock)
        let reply = try await withRPCClient(
            configuration: harness.clientConfiguration(port: try await development.port, identity: "operator")
        ) { client in
            try await YediRuntime.DevClock.Client(client).advanceClock(.init(seconds: 86_400))
        }
        XCTAssertEqual(reply.offsetSeconds, 86_400)
        XCTAssertEqual(development.environment.clock.now, clock.now + 86_400)
        XCTAssertEqual(reply.nowMs, Int64((clock.now + 86_400).timeIntervalSince1970 * 1_000))
        let backwards = await statusCode {
            try await withRPCClient(
                configuration: harness.clientConfiguration(port: try await development.port, identity: "operator")
            ) { client in
                _ = try await YediRuntime.DevClock.Client(client).advanceClock(.init(seconds: -60))
            }
        }
        XCTAssertEqual(backwards, .invalidArgument, "the clock never moves back")
        try await development.stop()
    }

    /// The development clock was once PUBLIC: any anonymous caller could move a --dev-clock process's
    /// time. Only the operator's service certificate may, and no other service's or client's.
    func testOnlyTheOperatorsCertificateMovesTheClock() async throws {
        let harness = try ServiceHarness()
        let clock = ManualClock()
        let development = try await harness.start(
            ChatServiceDefinition.self,
            configuration: try harness.configuration(ChatServiceDefinition.defaults) {
                $0.development = true
                $0.devClock = true
            },
            clock: clock)
        let port = try await development.port
        for identity in [nil, "yedi-probe", "account"] as [String?] {
            let refused = await statusCode {
                try await withRPCClient(configuration: harness.clientConfiguration(port: port, identity: identity)) {
                    _ = try await YediRuntime.DevClock.Client($0).advanceClock(.init(seconds: 3_600))
                }
            }
            XCTAssertTrue(
                [.unauthenticated, .permissionDenied].contains(refused), "\(identity ?? "anonymous"): \(refused)")
        }
        let withToken = await statusCode {
            try await withRPCClient(configuration: harness.clientConfiguration(port: port)) {
                _ = try await YediRuntime.DevClock.Client($0).advanceClock(
                    .init(seconds: 3_600),
                    options: ServiceHarness.bearer(
                        try harness.token(user: "u-customer", role: .customer, now: clock.now)))
            }
        }
        XCTAssertTrue([.unauthenticated, .permissionDenied].contains(withToken), "a signed-in user: \(withToken)")
        XCTAssertEqual(development.environment.clock.now, clock.now, "the clock moved")
        try await development.stop()
    }

    func testADevelopmentClockNeedsDevelopmentMode() throws {
        func resolve(_ arguments: [String], _ environment: [String: String] = [:]) throws -> ServiceConfiguration {
            try ServiceConfiguration.resolve(
                options: try ServiceOptions.parse(arguments), environment: environment,
                defaults: ChatServiceDefinition.defaults)
        }
        XCTAssertThrowsError(try resolve(["--dev-clock"])) { error in
            XCTAssertTrue("\(error)".contains("--development"), "\(error)")
        }
        XCTAssertThrowsError(try resolve([], ["YEDI_DEV_CLOCK": "1"]))
        XCTAssertTrue(try resolve(["--dev-clock"], ["YEDI_DEVELOPMENT": "1"]).devClock)
    }
}
