import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// One stream used from two tasks at once: the second concurrent write, or the second concurrent read,
/// is refused with an error that says so; no waiting task is ever forgotten.
final class StreamSharingTests: XCTestCase {
    var pki: TestPKI!

    override func setUp() async throws {
        pki = try TestPKI.get()
    }

    /// Expand writes one message from each of several child tasks at once; each runs its prelude first,
    /// and what each write did is reported as "<index>: written|cancelled|refused: …|failed: …".
    private struct ConcurrentWritersService: RPCService {
        let preludes: [@Sendable () async -> Void]
        let outcomes: LockedValue<[String]>

        var serviceDescriptor: ServiceDescriptor { YediEcho.Echo.descriptor }

        func registerMethods(with router: inout RPCRouter) {
            let (preludes, outcomes) = (preludes, outcomes)
            router.register(YediEcho.Echo.Method.expand) { (request, writer, _) in
                let message = YediEcho.EchoResponse(payload: [UInt8](repeating: 1, count: 64), text: "m")
                await withTaskGroup(of: String.self) { group in
                    for (index, prelude) in preludes.enumerated() {
                        group.addTask {
                            await prelude()
                            do {
                                try await writer.write(message)
                                return "\(index): written"
                            } catch is CancellationError {
                                return "\(index): cancelled"
                            } catch let error as RPCError {
                                return "\(index): refused: \(error.message)"
                            } catch {
                                return "\(index): failed: \(error)"
                            }
                        }
                    }
                    for await outcome in group { outcomes.withLock { $0.append(outcome) } }
                }
            }
        }
    }

    func testASecondConcurrentWriteIsRefusedAndTheFirstCompletes() async throws {
        let outcomes = LockedValue<[String]>([])
        let service = ConcurrentWritersService(preludes: [{}, {}], outcomes: outcomes)
        let server = try await RunningServer.start(pki: pki, services: [service])
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            let received = LockedValue(0)
            // A 16-byte window: the first write uses it up and waits for credit while the second comes.
            let stream = Task {
                try await YediEcho.Echo.Client(client).expand(
                    .init(count: 2, text: "x"), options: .init(timeout: .seconds(20), streamWindowBytes: 16)
                ) { responses in
                    try await Task.sleep(for: .milliseconds(300))
                    for try await _ in responses { received.withLock { $0 += 1 } }
                }
            }
            let bothReported = await eventually(timeout: .seconds(5)) { outcomes.value.count == 2 }
            XCTAssertTrue(bothReported, "a writer was forgotten: \(outcomes.value)")
            XCTAssertEqual(outcomes.value.filter { $0.hasSuffix(": written") }.count, 1, "\(outcomes.value)")
            XCTAssertEqual(outcomes.value.filter { $0.contains("another write") }.count, 1, "\(outcomes.value)")
            if bothReported {
                try await stream.value
                XCTAssertEqual(received.value, 1)
                await server.stop()
            } else {
                // A forgotten writer never returns, and stop() waits for every handler: leave it.
                stream.cancel()
            }
        }
    }

    /// Cancelling one task's write must not fail another task's waiting write.
    func testCancellingOneWriteLeavesAnotherTasksWaitingWriteAlone() async throws {
        let outcomes = LockedValue<[String]>([])
        // The first write waits for credit; the second task, already cancelled, tries to write too.
        let cancelledSecond: @Sendable () async -> Void = {
            try? await Task.sleep(for: .milliseconds(200))  // the first write waits by now
            withUnsafeCurrentTask { $0?.cancel() }
        }
        let service = ConcurrentWritersService(preludes: [{}, cancelledSecond], outcomes: outcomes)
        let server = try await RunningServer.start(pki: pki, services: [service])
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            try await YediEcho.Echo.Client(client).expand(
                .init(count: 2, text: "x"), options: .init(timeout: .seconds(20), streamWindowBytes: 16)
            ) { responses in
                try await Task.sleep(for: .milliseconds(600))
                for try await _ in responses {}
            }
        }
        XCTAssertEqual(outcomes.value.sorted(), ["0: written", "1: cancelled"])
        await server.stop()
    }

    func testASecondConcurrentReaderIsRefused() async throws {
        let server = try await RunningServer.start(pki: pki, services: [EchoTestService()])
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port])) { client in
            let outcomes = LockedValue<[String]>([])
            try? await YediEcho.Echo.Client(client).expand(.init(count: 0, text: "hang-after")) { responses in
                for _ in 0..<2 {
                    Task {
                        do {
                            for try await _ in responses {}
                            outcomes.withLock { $0.append("ended") }
                        } catch let error as RPCError {
                            outcomes.withLock { $0.append("\(error.code): \(error.message)") }
                        }
                    }
                }
                let oneRefused = await eventually(timeout: .seconds(3)) { outcomes.value.count == 1 }
                XCTAssertTrue(oneRefused, "\(outcomes.value)")
                XCTAssertTrue(outcomes.value.first?.contains("another task") ?? false, "\(outcomes.value)")
            }
            // Leaving the closure cancelled the call: the first reader hears of it too.
            let bothEnded = await eventually(timeout: .seconds(3)) { outcomes.value.count == 2 }
            XCTAssertTrue(bothEnded, "a reader was forgotten: \(outcomes.value)")
        }
        await server.stop()
    }
}
