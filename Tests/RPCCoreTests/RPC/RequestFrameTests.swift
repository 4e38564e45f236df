import NIOCore
import ProtoBridge
import XCTest

@testable import RPCCore

/// A client's REQUEST frames are written by hand: byte for byte what the generated encoder (protobuf-c)
/// writes for the same frame, which every reader (ours, protobuf-c) then reads back.
final class RequestFrameTests: XCTestCase {
    private func written(
        _ header: RequestHeader, callID: UInt64, timeoutMicros: UInt64 = 0, payload: [UInt8] = []
    ) throws -> ByteBuffer {
        var buffer = ByteBuffer()
        try buffer.writeRequestFrame(
            header, callID: callID, timeoutMicros: timeoutMicros, payload: ByteBuffer(bytes: payload))
        let length = try XCTUnwrap(buffer.readInteger(as: UInt32.self))
        XCTAssertEqual(Int(length), buffer.readableBytes, "the length prefix counts the rest")
        XCTAssertLessThanOrEqual(
            buffer.writerIndex, header.frameBytes + payload.count, "the room reserved for the frame suffices")
        return buffer
    }

    private func generated(_ frame: YediRPC.Frame) throws -> [UInt8] {
        var buffer = ByteBuffer()
        _ = try frame.serialize(into: &buffer)
        return Array(buffer.readableBytesView)
    }

    func testFramesAreWhatTheGeneratedEncoderWrites() throws {
        let token = "Bearer " + String(repeating: "eyJhbGciOiJFZERTQSJ9.", count: 14)
        var repeated = Metadata()
        repeated.add("a", "1")
        repeated.add("a", "2")
        let cases: [(header: RequestHeader, callID: UInt64, timeout: UInt64, window: UInt32, payload: [UInt8])] = [
            (RequestHeader(method: "/yedi.echo.Echo/Echo", metadata: [:]), 1, 0, 0, []),
            (
                RequestHeader(method: "/yedi.echo.Echo/Echo", metadata: ["authorization": token]), 300, 5_000_000, 0,
                Array(repeating: 7, count: 200)
            ),
            (RequestHeader(method: "/a/b", metadata: ["k": "", "": "v", "x-trace": "한국어 값"]), .max, 1, 65_536, [1]),
            (RequestHeader(method: "", metadata: repeated), 0, 0, 1, []),
            // Every varint at its longest, and lengths of three bytes: the room reserved still suffices.
            (
                RequestHeader(
                    method: String(repeating: "m", count: 20_000),
                    metadata: [String(repeating: "k", count: 20_000): String(repeating: "v", count: 20_000)]),
                .max, .max, .max, Array(repeating: 1, count: 20_000)
            ),
        ]
        for (header, callID, timeout, window, payload) in cases {
            var header = header
            header.windowBytes = window
            let body = try written(header, callID: callID, timeoutMicros: timeout, payload: payload)
            let expected = YediRPC.Frame(
                callID: callID, kind: .request, method: header.method, metadata: header.metadata.wire,
                timeoutMicros: timeout, payload: payload, windowBytes: window)
            XCTAssertEqual(Array(body.readableBytesView), try generated(expected), "\(header.method) \(callID)")
            XCTAssertEqual(try YediRPC.Frame(buffer: body), expected)
            let read = try InboundFrame.read(body)
            XCTAssertEqual(read.callID, callID)
            XCTAssertEqual(read.method, header.method)
            XCTAssertEqual(Array(read.metadata), Array(header.metadata))
            XCTAssertEqual(read.timeoutMicros, timeout)
            XCTAssertEqual(Array(read.payload.readableBytesView), payload)
        }
    }

    func testAStringWithANULIsRefusedNamingTheField() {
        let cases: [(RequestHeader, String)] = [
            (RequestHeader(method: "/a/b\u{0}", metadata: [:]), "method"),
            (RequestHeader(method: "/a/b", metadata: ["k\u{0}": "v"]), "metadata.key"),
            (RequestHeader(method: "/a/b", metadata: ["k": "v", "k2": "v\u{0}"]), "metadata.value"),
        ]
        for (header, field) in cases {
            var buffer = ByteBuffer()
            XCTAssertThrowsError(
                try buffer.writeRequestFrame(header, callID: 1, timeoutMicros: 0, payload: ByteBuffer())
            ) { error in
                XCTAssertEqual(
                    error as? ProtoEncodingError,
                    ProtoEncodingError(
                        messageType: "yedi.rpc.Frame", fieldPath: field, reason: .stringContainsNUL))
            }
            XCTAssertEqual(buffer.readableBytes, 0, "nothing is written")
        }
    }

    /// The word-at-a-time search finds a NUL at every offset of every length around the word size (the
    /// words and the tail), among bytes that look like zero to a careless bit trick (0x01, 0x80, 0xFF).
    func testANULIsFoundAtEveryOffsetAndNothingElseLooksLikeOne() {
        for filler: UInt8 in [0x01, 0x7F, 0x80, 0x81, 0xFF, 0x61] {
            for count in 0...41 {
                var bytes = [UInt8](repeating: filler, count: count)
                bytes.withUnsafeBytes { XCTAssertFalse(WireCursor.containsZero($0), "\(filler) × \(count)") }
                for offset in 0..<count {
                    bytes[offset] = 0
                    bytes.withUnsafeBytes { XCTAssertTrue(WireCursor.containsZero($0), "\(count) at \(offset)") }
                    bytes[offset] = filler
                }
            }
        }
        var token = RequestHeader(
            method: "/a/b", metadata: ["authorization": "Bearer " + String(repeating: "x", count: 300)])
        var buffer = ByteBuffer()
        XCTAssertNoThrow(try buffer.writeRequestFrame(token, callID: 1, timeoutMicros: 0, payload: ByteBuffer()))
        token = RequestHeader(
            method: "/a/b", metadata: ["authorization": "Bearer " + String(repeating: "x", count: 299) + "\u{0}"])
        XCTAssertThrowsError(try buffer.writeRequestFrame(token, callID: 2, timeoutMicros: 0, payload: ByteBuffer()))
    }

    /// Trailers share the writer: an END's metadata reads back as sent.
    func testTrailersAreWrittenAsTheGeneratedEncoderWrites() throws {
        let trailers: Metadata = ["retry-after": "1", "x-why": "", "x-many": "값"]
        var buffer = ByteBuffer()
        try buffer.writeMetadata(trailers)
        XCTAssertLessThanOrEqual(buffer.readableBytes, WireCursor.metadataBytes(trailers), "within the room reserved")
        XCTAssertEqual(
            Array(buffer.readableBytesView), try generated(YediRPC.Frame(metadata: trailers.wire)))
    }
}
