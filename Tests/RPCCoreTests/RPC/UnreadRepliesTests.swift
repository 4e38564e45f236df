import Foundation
import NIOCore
import NIOPosix
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// Replies count against the connection's memory budget until they are written to the socket: a peer
/// that sends many requests for large replies and never reads them cannot make the server hold more
/// than about the budget, and another client's large replies keep arriving meanwhile.
final class UnreadRepliesTests: XCTestCase {
    var pki: TestPKI!
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    override func setUp() async throws {
        pki = try TestPKI.get()
    }

    override func tearDown() async throws {
        try await group.shutdownGracefully()
    }

    static let replyBytes = 4 << 20
    static let budget = 16 << 20

    /// Answers every call with `replyBytes` of payload after a short wait, like an image fetch that
    /// reads its blob: every request of a burst starts before the first reply exists. Counts the handlers.
    private static func largeReplyService(_ handled: LockedValue<Int>) -> RawHandlerService {
        let reply = [UInt8](repeating: 0x5A, count: replyBytes)
        return RawHandlerService { payload, _ in
            let request = try YediEcho.EchoRequest(serializedBytes: payload)
            try await Task.sleep(for: .milliseconds(20))
            handled.withLock { $0 += 1 }
            return try YediEcho.EchoResponse(payload: reply, text: request.text).serializedBytes()
        }
    }

    /// A TLS connection that stops reading once its handshake is done.
    private func nonReadingConnection(port: Int) throws -> RawRPCConnection {
        let connection = try RawRPCConnection(pki: pki, group: group, port: port)
        try connection.client.channel.setOption(ChannelOptions.autoRead, value: false).wait()
        return connection
    }

    private func largeReplies(_ client: RPCClient, _ texts: [String]) async throws {
        for text in texts {
            let reply = try await YediEcho.Echo.Client(client).echo(.init(text: text))
            XCTAssertEqual(reply.text, text)
            XCTAssertEqual(reply.payload.count, Self.replyBytes)
        }
    }

    private func clientConfiguration(_ server: RunningServer) -> ClientConfiguration {
        pki.rpcClientConfiguration(ports: [server.port]) { $0.limits.maxFrameBytes = 8 << 20 }
    }

    func testAClientThatNeverReadsKeepsTheServerWithinTheBudgetWhileOthersAreServed() async throws {
        let handled = LockedValue(0)
        let server = try await RunningServer.start(pki: pki, services: [Self.largeReplyService(handled)]) {
            $0.limits.maxConnectionBytes = Self.budget
            $0.limits.maxFrameBytes = 8 << 20
        }
        // A server that has answered the method before (any running one): it knows its replies are large.
        try await withRPCClient(configuration: clientConfiguration(server)) { try await largeReplies($0, ["warm"]) }
        let flood = try nonReadingConnection(port: server.port)
        let calls = 64
        let before = residentBytes()
        var peak = before
        try flood.send(try (1...calls).map { try RawRPCConnection.request(UInt64($0), text: "flood") })
        // Let the server do all it will with what it read.
        for _ in 0..<20 {
            try await Task.sleep(for: .milliseconds(100))
            peak = max(peak, residentBytes())
        }

        // Another client's large replies arrive meanwhile.
        try await withRPCClient(configuration: clientConfiguration(server)) { client in
            try await largeReplies(client, (0..<4).map { "other \($0)" })
        }
        peak = max(peak, residentBytes())
        let grown = peak - before
        print(
            "unread replies: \(calls) requests for \(Self.replyBytes >> 20) MiB replies never read, "
                + "\(handled.value - 5) of them handled, resident memory +\(grown >> 20) MiB (budget \(Self.budget >> 20) MiB)"
        )
        // Without replies in the budget: all 64 handlers ran, their replies queued with their TLS copies,
        // +499 MiB. With it: the budget's worth (4 calls) ran, and the rest wait to start; what remains is
        // the replies with their ciphertext, the other client's replies and allocator slack.
        XCTAssertLessThanOrEqual(handled.value - 5, Self.budget / Self.replyBytes, "more replies made than fit")
        XCTAssertLessThan(grown, 5 * Self.budget, "resident memory grew by \(grown >> 20) MiB")
        _ = try? flood.closeAndCollect()
        await server.stop()
    }

    /// A peer that never reads what it asked for is dropped once its replies have not moved for the
    /// stall timeout; until then, and after, other clients are served.
    func testAPeerWhoseRepliesDoNotMoveIsDroppedAfterTheStallTimeout() async throws {
        let handled = LockedValue(0)
        let server = try await RunningServer.start(pki: pki, services: [Self.largeReplyService(handled)]) {
            $0.limits.maxConnectionBytes = Self.budget
            $0.limits.maxFrameBytes = 8 << 20
            $0.replyStallTimeout = .seconds(1)
        }
        let flood = try nonReadingConnection(port: server.port)
        try flood.send(try (1...8).map { try RawRPCConnection.request(UInt64($0), text: "flood") })
        let sent = ContinuousClock.now
        try await withRPCClient(configuration: clientConfiguration(server)) { try await largeReplies($0, ["other"]) }
        try await Task.sleep(for: .seconds(2))
        // Reading again shows what the server did meanwhile: it sent what fit, then closed.
        flood.client.channel.read()
        try await flood.client.channel.setOption(ChannelOptions.autoRead, value: true).get()
        let outcome = try flood.client.closed.wait(timeout: .seconds(10), "the server drops the stalled peer")
        print("stalled peer dropped after \(ContinuousClock.now - sent), \(outcome.received.readableBytes) bytes sent")
        XCTAssertLessThan(outcome.received.readableBytes, 2 * Self.budget)
        try await withRPCClient(configuration: clientConfiguration(server)) { try await largeReplies($0, ["after"]) }
        await server.stop()
    }
}
