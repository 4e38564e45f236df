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
            try await withRPCClient(configuration: harness.clientConfiguration(port: try await plain.port)) { client in
                _ = try await YediRuntime.DevClock.Client(client).advanceClock(.init(seconds: 3_600))
            }
        }
        XCTAssertEqual(refused, .failedPrecondition)
        XCTAssertEqual(plain.environment.clock.now, clock.now, "a process without the flag keeps its clock")
        try await plain.stop()

        let development = try await harness.start(
            ChatServiceDefinition.self,
            configuration: try harness.configuration(ChatServiceDefinition.defaults) { $0.devClock = true },
            clock: clock)
        let reply = try await withRPCClient(
            configuration: harness.clientConfiguration(port: try await development.port)
        ) { client in
            try await YediRuntime.DevClock.Client(client).advanceClock(.init(seconds: 86_400))
        }
        XCTAssertEqual(reply.offsetSeconds, 86_400)
        XCTAssertEqual(development.environment.clock.now, clock.now + 86_400)
        XCTAssertEqual(reply.nowMs, Int64((clock.now + 86_400).timeIntervalSince1970 * 1_000))
        let backwards = await statusCode {
            try await withRPCClient(
                configuration: harness.clientConfiguration(port: try await development.port)
            ) { client in
                _ = try await YediRuntime.DevClock.Client(client).advanceClock(.init(seconds: -60))
            }
        }
        XCTAssertEqual(backwards, .invalidArgument, "the clock never moves back")
        try await development.stop()
    }
}
