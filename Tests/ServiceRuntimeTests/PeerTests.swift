import GRDB
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import BookingService

/// Peer clients: mutual TLS with the service's own certificate, the callee's identity checked, and the
/// user a call is made for carried along as proof (the user's token), not as a claim.
final class PeerTests: XCTestCase {
    private var harness: ServiceHarness!

    override func setUpWithError() throws {
        harness = try ServiceHarness()
    }

    func testAPeerCallMadeForAUserCarriesTheServiceAndTheUser() async throws {
        let chat = try await harness.start(
            WitnessDefinition.self, configuration: try harness.configuration(WitnessDefinition.defaults))
        let content = try await harness.start(
            ForwarderDefinition.self,
            configuration: try harness.configuration(ForwarderDefinition.defaults, peers: ["chat": try await chat.port])
        )
        let token = try harness.token(user: "u-7", role: .customer)
        let reply = try await withRPCClient(configuration: harness.clientConfiguration(port: try await content.port)) {
            client in
            try await YediEcho.Echo.Client(client).echo(.init(text: "hi"), options: ServiceHarness.bearer(token))
        }
        XCTAssertEqual(reply.text, "caller=service content; for=u-7 (customer)")
        try await content.stop()
        try await chat.stop()
    }

    func testAFakePeerPassesForTheServiceItStandsIn() async throws {
        let witness = RPCMethodSet(YediEcho.Echo.descriptor) { router in
            router.register(YediEcho.Echo.Method.expand) { _, writer, context in
                let user = context.onBehalfOf.map { "\($0.id) (\($0.role))" } ?? "nobody"
                try await writer.write(.init(text: "fake; caller=\(context.caller); for=\(user)"))
            }
        }
        let chat = try await harness.startFakePeer("chat", services: [witness])
        let content = try await harness.start(
            ForwarderDefinition.self,
            configuration: try harness.configuration(ForwarderDefinition.defaults, peers: ["chat": chat.port])
        )
        let token = try harness.token(user: "u-8", role: .designer)
        let reply = try await withRPCClient(configuration: harness.clientConfiguration(port: try await content.port)) {
            client in
            try await YediEcho.Echo.Client(client).echo(.init(text: "hi"), options: ServiceHarness.bearer(token))
        }
        XCTAssertEqual(reply.text, "fake; caller=service content; for=u-8 (designer)")
        try await content.stop()
        await chat.stop()
    }

    func testAPeerClientRefusesAServerPresentingAnotherServiceIdentity() async throws {
        // Something answers at chat's address, but with booking's certificate (same CA, wrong service).
        let booking = try await harness.start(
            BookingServiceDefinition.self, configuration: try harness.configuration(BookingServiceDefinition.defaults))
        let content = try await harness.start(
            ForwarderDefinition.self,
            configuration: try harness.configuration(
                ForwarderDefinition.defaults, peers: ["chat": try await booking.port])
        )
        let client = try content.environment.peers.client(for: "chat")
        do {
            _ = try await client.unary(
                YediEcho.Echo.Method.echo, .init(text: "x"), options: .init(timeout: .seconds(5)))
            XCTFail("a server with booking's certificate was accepted as chat")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .unavailable)
            XCTAssertTrue(error.message.contains("spiffe://yedi/service/chat"), error.message)
        }
        XCTAssertThrowsError(try content.environment.peers.client(for: "account")) { error in
            XCTAssertEqual((error as? RPCError)?.code, .failedPrecondition)
        }
        try await content.stop()
        try await booking.stop()
    }
}

/// "chat": its Expand (SERVICE, callers content) says who called and for whom.
enum WitnessDefinition: ServiceDefinition {
    static let defaults = ServiceDefaults(name: "chat", port: 0, metricsPort: 0)
    static let summary = "test witness"

    static func migrate(_ migrator: inout DatabaseMigrator) {}

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        [
            RPCMethodSet(YediEcho.Echo.descriptor) { router in
                router.register(YediEcho.Echo.Method.expand) { _, writer, context in
                    let user = context.onBehalfOf.map { "\($0.id) (\($0.role))" } ?? "nobody"
                    try await writer.write(.init(text: "caller=\(context.caller); for=\(user)"))
                }
            }
        ]
    }
}

/// "content": its Echo (USER) asks chat's Expand and returns the first answer.
enum ForwarderDefinition: ServiceDefinition {
    static let defaults = ServiceDefaults(name: "content", port: 0, metricsPort: 0, peers: ["chat"])
    static let summary = "test forwarder"

    static func migrate(_ migrator: inout DatabaseMigrator) {}

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        [
            RPCMethodSet(YediEcho.Echo.descriptor) { router in
                router.register(YediEcho.Echo.Method.echo) { request, _ in
                    let chat = YediEcho.Echo.Client(try env.peers.client(for: "chat"))
                    let text = try await chat.expand(.init(count: 1, text: request.text)) { stream in
                        var first = ""
                        for try await message in stream {
                            first = message.text
                            break
                        }
                        return first
                    }
                    return YediEcho.EchoResponse(text: text)
                }
            }
        ]
    }
}
