import Foundation
import GRDB
import NIOConcurrencyHelpers
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService
@testable import ContentService

/// Jobs written with a change are delivered to the peer after the commit, retried while the peer is
/// down, redelivered after a crash mid-delivery, and applied once by the receiver.
final class OutboxTests: XCTestCase {
    private var harness: ServiceHarness!

    override func setUpWithError() throws {
        harness = try ServiceHarness()
    }

    func testAJobWhosePeerIsDownIsRetriedUntilThePeerComesUp() async throws {
        let contentPort = try ServiceHarness.unusedPort()
        let account = try await harness.start(
            AccountServiceDefinition.self,
            configuration: try harness.configuration(AccountServiceDefinition.defaults, peers: ["content": contentPort])
        )
        let env = account.environment
        let jobID = try await env.database.write { db in
            try env.outbox.enqueue(
                in: db, peer: "content", method: YediContent.ContentService.Method.purgeUser,
                request: YediCommon.PurgeUserRequest(userID: "u-42"))
        }
        // The peer is down: the job stays, and its failed attempts are counted.
        let attempted = try await eventually(timeout: 20) {
            try await env.database.read { db in
                try Int.fetchOne(db, sql: "SELECT attempts FROM runtime_outbox WHERE id = ?", arguments: [jobID])
            }.map { $0 >= 2 } ?? false
        }
        XCTAssertTrue(attempted, "the job was not retried while its peer was down")

        let content = try await harness.start(
            ContentServiceDefinition.self,
            configuration: try harness.configuration(ContentServiceDefinition.defaults, port: contentPort)
        )
        let delivered = try await eventually(timeout: 30) {
            try await env.database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_outbox") } == 0
        }
        XCTAssertTrue(delivered, "the job was not delivered once its peer came up")
        let receipts = try await content.environment.database.read { db in
            try String.fetchAll(db, sql: "SELECT key FROM runtime_receipt")
        }
        XCTAssertEqual(receipts, ["account/\(jobID)"], "the receiver records the delivery under the sender's name")
        try await account.stop()
        try await content.stop()
    }

    /// Delivery was once sequential: one callee that accepted connections and never answered held every
    /// other peer's jobs for its 10 s timeout.
    func testAHungPeerDoesNotDelayTheOtherPeersDeliveries() async throws {
        let hung = try SilentListener()
        let content = try await harness.start(
            ContentServiceDefinition.self, configuration: try harness.configuration(ContentServiceDefinition.defaults))
        let account = try await harness.start(
            AccountServiceDefinition.self,
            configuration: try harness.configuration(
                AccountServiceDefinition.defaults, peers: ["chat": hung.port, "content": try await content.port])
        )
        let env = account.environment
        let started = ContinuousClock.now
        let (hungJob, liveJob) = try await env.database.write { db in
            (
                try env.outbox.enqueue(
                    in: db, peer: "chat", method: YediChat.ChatService.Method.purgeUser,
                    request: YediCommon.PurgeUserRequest(userID: "u-1")),
                try env.outbox.enqueue(
                    in: db, peer: "content", method: YediContent.ContentService.Method.purgeUser,
                    request: YediCommon.PurgeUserRequest(userID: "u-1"))
            )
        }
        let delivered = try await eventually(timeout: 30) {
            try await env.database.read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_outbox WHERE id = ?", arguments: [liveJob])
            } == 0
        }
        let elapsed = ContinuousClock.now - started
        XCTAssertTrue(delivered)
        // The hung delivery takes its whole 10 s timeout; the live one must not wait for it (a wide bound:
        // sanitizer builds are slow).
        XCTAssertLessThan(elapsed, .seconds(8), "the live peer's job waited behind the hung peer's")
        let stillPending = try await env.database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_outbox WHERE id = ?", arguments: [hungJob])
        }
        XCTAssertEqual(stillPending, 1, "the hung peer cannot have accepted its job")
        try await account.stop()
        try await content.stop()
    }

    func testAJobIsNotDeliveredWhenItsTransactionRollsBack() async throws {
        let contentPort = try ServiceHarness.unusedPort()
        let account = try await harness.start(
            AccountServiceDefinition.self,
            configuration: try harness.configuration(AccountServiceDefinition.defaults, peers: ["content": contentPort])
        )
        let env = account.environment
        struct Abort: Error {}
        do {
            try await env.database.write { db in
                try env.outbox.enqueue(
                    in: db, peer: "content", method: YediContent.ContentService.Method.purgeUser,
                    request: YediCommon.PurgeUserRequest(userID: "u-1"))
                throw Abort()
            }
            XCTFail("the transaction should have failed")
        } catch is Abort {}
        let pending = try await env.database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_outbox")
        }
        XCTAssertEqual(pending, 0)
        try await account.stop()
    }

    /// The sender is a separate process killed with SIGKILL while the receiver is applying its job; after
    /// a restart it delivers again, and the receiver applies the job once.
    func testAWorkerKilledMidDeliveryDeliversAfterRestartAndTheReceiverAppliesOnce() async throws {
        let gate = DeliveryGate()
        ReceiverDefinition.gate.withLockedValue { $0 = gate }
        let receiver = try await harness.start(
            ReceiverDefinition.self, configuration: try harness.configuration(ReceiverDefinition.defaults))
        let receiverPort = try await receiver.port
        let dataDirectory = harness.dataRoot.appendingPathComponent("sender").path
        let arguments = [
            "--pki", harness.pki.devPKI.path, "--data", dataDirectory, "--port", "0", "--metrics-port", "0",
            "--peer", "content=127.0.0.1:\(receiverPort)", "--log-level", "warning",
        ]
        let binary = try BuiltProducts.path("RuntimeTestbed")

        let first = try RunningProcess("/usr/bin/env", ["YEDI_TESTBED_ENQUEUE=1", binary] + arguments)
        let reached = try await eventually(timeout: 30) { gate.deliveries >= 1 }
        XCTAssertTrue(reached, "the first delivery never arrived: \(first.errorOutput)")
        first.send(SIGKILL)
        _ = first.finish(timeout: 10)
        gate.open()  // the receiver finishes applying the delivery whose sender died

        let second = try RunningProcess(binary, arguments)
        let redelivered = try await eventually(timeout: 30) { gate.deliveries >= 2 }
        XCTAssertTrue(redelivered, "the job was not delivered again after the restart: \(second.errorOutput)")
        var readOnly = Configuration()
        readOnly.readonly = true
        let senderDatabase = try DatabasePool(path: dataDirectory + "/account.sqlite", configuration: readOnly)
        let drained = try await eventually(timeout: 30) {
            try await senderDatabase.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runtime_outbox") }
                == 0
        }
        XCTAssertTrue(drained, "the sender did not delete the job once it was accepted")
        try senderDatabase.close()
        second.send(SIGTERM)
        _ = second.finish(timeout: 20)
        XCTAssertEqual(gate.applied, ["u-1"], "applied exactly once")
        XCTAssertEqual(gate.deliveries, 2, "delivered at least once more after the crash")
        try await receiver.stop()
    }
}

/// Lets a test hold the receiver's first delivery until the sender has been killed.
final class DeliveryGate: Sendable {
    private let state = NIOLockedValueBox<(deliveries: Int, applied: [String], open: Bool)>((0, [], false))

    var deliveries: Int { state.withLockedValue { $0.deliveries } }
    var applied: [String] { state.withLockedValue { $0.applied } }

    func open() { state.withLockedValue { $0.open = true } }

    func arrived() { state.withLockedValue { $0.deliveries += 1 } }

    func recordApplied(_ user: String) { state.withLockedValue { $0.applied.append(user) } }

    func waitUntilOpen() async throws {
        while !state.withLockedValue({ $0.open }) { try await Task.sleep(for: .milliseconds(20)) }
    }
}

/// A "content" service whose PurgeUser waits at the gate, then applies once through the receipt ledger.
enum ReceiverDefinition: ServiceDefinition {
    static let defaults = ServiceDefaults(name: "content", port: 0, metricsPort: 0)
    static let summary = "test receiver"
    static let gate = NIOLockedValueBox<DeliveryGate?>(nil)

    static func migrate(_ migrator: inout DatabaseMigrator) {}

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        let gate = Self.gate.withLockedValue { $0 }!
        return [
            RPCMethodSet(YediContent.ContentService.descriptor) { router in
                router.register(YediContent.ContentService.Method.purgeUser) { request, context in
                    gate.arrived()
                    try await gate.waitUntilOpen()
                    let first = try await env.database.write { db in
                        try ReceiptLedger.isFirstDelivery(in: db, Delivery(context), nowMilliseconds: 0)
                    }
                    if first { gate.recordApplied(request.userID) }
                    return YediCommon.PurgeUserResponse()
                }
            }
        ]
    }
}

/// A TCP port whose connections the kernel completes but nobody ever reads or answers: a hung peer.
final class SilentListener {
    let port: Int
    private let socketFD: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && listen(fd, 128) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        socketFD = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(socketFD) }
}
