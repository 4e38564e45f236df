import RPCCore
import RPCTestSupport
import XCTest
import YediProto

/// Server-streaming calls: delivery, flow control against a slow reader, cancellation.
final class StreamingCallTests: EchoServerTestCase {
    func testStreamDeliversEveryMessageInOrder() async throws {
        let sequences = try await withEcho { echo in
            try await echo.expand(.init(count: 500, payloadSize: 10, text: "s")) { stream in
                var sequences: [Int64] = []
                for try await reply in stream { sequences.append(reply.sequence) }
                return sequences
            }
        }
        XCTAssertEqual(sequences, Array(0..<500))
        XCTAssertEqual(service.probe.finishedCalls, ["s"])
    }

    /// 100,000 messages to a reader that keeps pausing: the server never runs more than the
    /// flow-control window ahead of what the reader has taken, so its memory stays bounded.
    func testSlowReaderHoldsTheServerBackWithinTheWindow() async throws {
        let window = 16 << 10
        let payloadSize = 64
        let messageBytes = try YediEcho.EchoResponse(
            payload: [UInt8](repeating: 0x5A, count: payloadSize), text: "slow", sequence: 99_999
        ).serializedSize()
        let bound = window / (messageBytes - 4) + 2
        let total: Int64 = 100_000
        let (count, largestLead) = try await withEcho { echo in
            try await echo.expand(
                .init(count: total, payloadSize: Int32(payloadSize), text: "slow"),
                options: .init(streamWindowBytes: window)
            ) { stream in
                var count: Int64 = 0
                var largestLead = 0
                for try await reply in stream {
                    XCTAssertEqual(reply.sequence, count)
                    count += 1
                    if count % 10_000 == 0 {
                        // Pause: a server that ignored flow control would race ahead now.
                        try await Task.sleep(for: .milliseconds(30))
                        largestLead = max(largestLead, self.service.probe.streamedMessages - Int(count))
                    }
                }
                return (count, largestLead)
            }
        }
        XCTAssertEqual(count, total)
        XCTAssertLessThanOrEqual(largestLead, bound, "the server ran \(largestLead) messages ahead (bound \(bound))")
        XCTAssertGreaterThan(largestLead, 0, "the server should fill the window while the reader pauses")
    }

    func testLeavingTheStreamEarlyCancelsTheServerHandler() async throws {
        let received = try await withEcho { echo in
            try await echo.expand(.init(count: 1_000_000, payloadSize: 16, text: "early")) { stream in
                var received = 0
                for try await _ in stream {
                    received += 1
                    if received == 10 { break }
                }
                return received
            }
        }
        XCTAssertEqual(received, 10)
        let cancelled = await eventually { self.service.probe.cancelledCalls == ["early"] }
        XCTAssertTrue(cancelled, "the server kept streaming after the client left")
    }

    func testCancellingTheCallerTaskCancelsTheStream() async throws {
        try await withEcho { echo in
            let consumer = Task {
                try await echo.expand(.init(count: 3, payloadSize: 1, text: "hang-after")) { stream in
                    for try await _ in stream {}
                }
            }
            let streamed = await eventually { self.service.probe.streamedMessages == 3 }
            XCTAssertTrue(streamed)
            consumer.cancel()
            do {
                try await consumer.value
                XCTFail("expected CANCELLED")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, .cancelled)
            }
        }
        let cancelled = await eventually { self.service.probe.cancelledCalls == ["hang-after"] }
        XCTAssertTrue(cancelled)
    }

    func testStreamDeadline() async throws {
        try await withEcho { echo in
            do {
                try await echo.expand(
                    .init(count: 2, payloadSize: 1, text: "hang-after"),
                    options: .init(timeout: .milliseconds(300))
                ) { stream in
                    for try await _ in stream {}
                }
                XCTFail("expected DEADLINE_EXCEEDED")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, .deadlineExceeded)
            }
        }
    }
}
