import NIOCore
import ProtoBridge
import XCTest

@testable import RPCCore

/// Reply frames are built around their message where it is encoded: the frame written is the buffer
/// the message was packed into, and it reads as the frame the generated encoder would have written.
final class ReplyFrameTests: XCTestCase {
    private let message = YediRPC.Status(code: 5, message: "a response of some length")

    /// The frame after its 4-byte length prefix, which must count exactly the rest.
    private func body(of frame: ByteBuffer) throws -> ByteBuffer {
        var frame = frame
        let length = try XCTUnwrap(frame.readInteger(as: UInt32.self))
        XCTAssertEqual(Int(length), frame.readableBytes, "the length prefix")
        return frame
    }

    func testAUnaryEndCarriesItsResponseAndTrailers() throws {
        var response = ServerResponse(reply: try ReplyFrame.encode(message, maxPayloadBytes: 1_000))
        response.trailers = ["Retry-After": "1"]
        XCTAssertEqual(response.messageBytes, try message.serializedSize())
        XCTAssertEqual(try response.message.map { try YediRPC.Status(buffer: $0) }, message)
        guard case .answered(let frame, let messageBytes) = response.takeEndFrame(callID: 300) else {
            return XCTFail("the frame must finish")
        }
        XCTAssertEqual(messageBytes, try message.serializedSize())
        let expected = YediRPC.Frame(
            callID: 300, kind: .end, metadata: [.init(key: "retry-after", value: "1")],
            payload: try message.serializedBytes())
        XCTAssertEqual(try YediRPC.Frame(buffer: try body(of: frame)), expected)
        let read = try InboundFrame.read(try body(of: frame))
        XCTAssertEqual(read.callID, 300)
        XCTAssertEqual(read.kind, .end)
        XCTAssertEqual(try YediRPC.Status(buffer: read.payload), message)
        XCTAssertEqual(read.metadata["retry-after"], "1")
    }

    /// The envelope at its longest (a call id of ten varint bytes) and with no message, as the generated
    /// encoder writes it.
    func testTheLongestEnvelopeAndAnEmptyMessage() throws {
        var reply = try ReplyFrame.encode(message, maxPayloadBytes: 1_000)
        let frame = try reply.finish(callID: .max, kind: .end, trailers: ["k": "v"])
        XCTAssertEqual(
            try YediRPC.Frame(buffer: try body(of: frame)),
            YediRPC.Frame(
                callID: .max, kind: .end, metadata: [.init(key: "k", value: "v")],
                payload: try message.serializedBytes()))
        var unknown = try ReplyFrame.encode(message, maxPayloadBytes: 1_000)
        let unknownKind = try unknown.finish(callID: .max, kind: .unrecognized(-1))
        XCTAssertEqual(
            try YediRPC.Frame(buffer: try body(of: unknownKind)),
            YediRPC.Frame(callID: .max, kind: .unrecognized(-1), payload: try message.serializedBytes()))
        var empty = try ReplyFrame.encode(YediRPC.Status(), maxPayloadBytes: 1_000)
        let emptyFrame = try empty.finish(callID: 1, kind: .message)
        XCTAssertEqual(Array(try body(of: emptyFrame).readableBytesView), [0x08, 1, 0x10, 2])
    }

    /// The message is where it was packed when the frame leaves: finishing appended, it did not copy.
    func testFinishingAUnaryEndDoesNotCopyTheResponse() throws {
        var response = ServerResponse(reply: try ReplyFrame.encode(message, maxPayloadBytes: 1_000))
        let packedAt = try XCTUnwrap(response.message).withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        guard case .answered(let frame, _) = response.takeEndFrame(callID: 7) else {
            return XCTFail("the frame must finish")
        }
        let read = try InboundFrame.read(try body(of: frame))
        let sentFrom = read.payload.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        XCTAssertEqual(sentFrom, packedAt, "the response was copied")
    }

    func testAStreamMessageAndAStreamEnd() throws {
        var reply = try ReplyFrame.encode(message, maxPayloadBytes: 1_000)
        let frame = try reply.finish(callID: 9, kind: .message)
        XCTAssertEqual(
            try YediRPC.Frame(buffer: try body(of: frame)),
            YediRPC.Frame(callID: 9, kind: .message, payload: try message.serializedBytes()))

        var end = ServerResponse(reply: nil, trailers: ["k": "v"])
        guard case .answered(let endFrame, let messageBytes) = end.takeEndFrame(callID: 9) else {
            return XCTFail("the frame must finish")
        }
        XCTAssertNil(messageBytes, "a stream's END carries no response")
        XCTAssertEqual(
            try YediRPC.Frame(buffer: try body(of: endFrame)),
            YediRPC.Frame(callID: 9, kind: .end, metadata: [.init(key: "k", value: "v")]))
    }

    func testAnEmptyResponseAndRawBytes() throws {
        var empty = ServerResponse(reply: try ReplyFrame.encode(YediRPC.Status(), maxPayloadBytes: 1_000))
        XCTAssertEqual(empty.messageBytes, 0)
        guard case .answered(let frame, let messageBytes) = empty.takeEndFrame(callID: 1) else {
            return XCTFail("the frame must finish")
        }
        XCTAssertEqual(messageBytes, 0)
        XCTAssertEqual(try YediRPC.Frame(buffer: try body(of: frame)), YediRPC.Frame(callID: 1, kind: .end))

        var raw = ServerResponse(message: ByteBuffer(bytes: [1, 2, 3]))
        guard case .answered(let rawFrame, _) = raw.takeEndFrame(callID: 2) else {
            return XCTFail("the frame must finish")
        }
        XCTAssertEqual(
            try YediRPC.Frame(buffer: try body(of: rawFrame)), YediRPC.Frame(callID: 2, kind: .end, payload: [1, 2, 3]))
    }

    func testAResponseOverTheFrameLimitIsRefusedAndTrailersThatCannotBeEncodedSaySo() throws {
        let size = try message.serializedSize()
        XCTAssertThrowsError(try ReplyFrame.encode(message, maxPayloadBytes: size - 1)) {
            XCTAssertEqual(($0 as? RPCError)?.code, .resourceExhausted)
            XCTAssertEqual(
                ($0 as? RPCError)?.message,
                "the response (\(size) bytes) exceeds the frame limit of \(size - 1) bytes")
        }
        var response = ServerResponse(reply: try ReplyFrame.encode(message, maxPayloadBytes: size))
        response.trailers = ["k": "a\u{0}b"]
        guard case .unencodable(_, let messageBytes) = response.takeEndFrame(callID: 1) else {
            return XCTFail("a NUL in the trailers cannot be encoded")
        }
        XCTAssertEqual(messageBytes, size)
    }
}
