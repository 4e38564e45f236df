import Logging
import RPCAccess
import ServiceRuntime
import Synchronization
import XCTest
import YediProto

@testable import RPCCore

/// The running calls a revocation waits for: unary calls of the user only, a call of a user revoked
/// meanwhile refused once counted, and a wait that ends when its task is cancelled.
final class UserCallTrackerTests: XCTestCase {
    private final class Revoked: RevocationLookup {
        let users = Mutex<Set<String>>([])
        /// Revoked up to this instant (a token issued later passes).
        let revokedAt = Date(timeIntervalSince1970: 1_000)
        func isRevoked(_ user: AuthenticatedUser) -> Bool {
            users.withLock { $0.contains(user.id) } && (user.issuedAt ?? .distantPast) <= revokedAt
        }
    }

    private func context(_ method: MethodDescriptor, user: String, issuedAt: Date? = nil) -> ServerContext {
        ServerContext(
            method: method, metadata: [:], deadline: nil, peer: PeerInfo(address: "test"),
            caller: .user(AuthenticatedUser(id: user, role: .customer, issuedAt: issuedAt)),
            logger: Logger(label: "test"))
    }

    func testAUnaryCallCountsUntilItEndsAndAStreamDoesNot() async throws {
        let tracker = UserCallTracker()
        let inside = Mutex<[Int]>([])
        _ = try await tracker.intercept(
            context: context(YediChat.ChatService.Method.sendMessage.descriptor, user: "u-1")
        ) {
            _ in
            inside.withLock { $0.append(tracker.runningCalls(of: "u-1")) }
            return ServerResponse(message: nil)
        }
        _ = try await tracker.intercept(context: context(YediChat.ChatService.Method.subscribe.descriptor, user: "u-1"))
        {
            _ in
            inside.withLock { $0.append(tracker.runningCalls(of: "u-1")) }
            return ServerResponse(message: nil)
        }
        XCTAssertEqual(inside.withLock { $0 }, [1, 0], "the unary call counted, the stream not")
        XCTAssertEqual(tracker.runningCalls(of: "u-1"), 0)
    }

    /// A call that passed authentication just before the revocation committed is refused once counted,
    /// so the revocation's wait cannot miss it.
    func testACallOfAUserRevokedMeanwhileIsRefusedOnceCounted() async throws {
        let revoked = Revoked()
        revoked.users.withLock { _ = $0.insert("u-gone") }
        let tracker = UserCallTracker(revokedUsers: revoked)
        let ran = Mutex(false)
        do {
            _ = try await tracker.intercept(
                context: context(YediChat.ChatService.Method.sendMessage.descriptor, user: "u-gone")
            ) { _ in
                ran.withLock { $0 = true }
                return ServerResponse(message: nil)
            }
            XCTFail("a revoked user's call ran")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .unauthenticated)
        }
        XCTAssertFalse(ran.withLock { $0 })
        XCTAssertEqual(tracker.runningCalls(of: "u-gone"), 0)

        // A token issued after the revocation (the session a new password started) is the user's own.
        let fresh = try await tracker.intercept(
            context: context(
                YediChat.ChatService.Method.sendMessage.descriptor, user: "u-gone",
                issuedAt: revoked.revokedAt.addingTimeInterval(1))
        ) { _ in
            ran.withLock { $0 = true }
            return ServerResponse(message: nil)
        }
        XCTAssertNil(fresh.message)
        XCTAssertTrue(ran.withLock { $0 }, "a token issued after the revocation is let through")
    }

    func testWaitingForACallEndsWhenTheWaitIsCancelled() async throws {
        let tracker = UserCallTracker()
        let release = AsyncStream<Void>.makeStream()
        let stream = release.stream
        let running = context(YediChat.ChatService.Method.sendMessage.descriptor, user: "u-1")
        let call = Task {
            try await tracker.intercept(context: running) { _ in
                for await _ in stream { break }
                return ServerResponse(message: nil)
            }
        }
        while tracker.runningCalls(of: "u-1") == 0 { try await Task.sleep(for: .milliseconds(5)) }
        let waiter = Task { await tracker.waitUntilIdle("u-1", timeout: .seconds(60)) }
        try await Task.sleep(for: .milliseconds(50))
        waiter.cancel()
        let clock = ContinuousClock()
        var idle = true
        let waited = await clock.measure { idle = await waiter.value }
        XCTAssertFalse(idle)
        XCTAssertLessThan(waited, .seconds(5), "the cancelled wait kept polling")
        release.continuation.yield()
        release.continuation.finish()
        _ = try await call.value
        let after = await tracker.waitUntilIdle("u-1", timeout: .seconds(5))
        XCTAssertTrue(after)
    }
}
