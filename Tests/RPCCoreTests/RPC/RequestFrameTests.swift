import NIOCore
import ProtoBridge
import XCTest

@testable import RPCCore

/// A client's REQUEST frames are written by hand: byte for byte what the generated encoder (protobuf-c)
/// writes for the same frame, which every reader (ours, protobuf-c) then reads back.
final class RequestFrameTests: XCTestCase {
    private func written(
        _ header: RequestHeader, callID: UInt64, timeoutMicros: UInt64 = 0, payload: [UInt8] = [],
        repeating previous: Metadata? = nil
    ) throws -> ByteBuffer {
        var buffer = ByteBuffer()
        try buffer.writeRequestFrame(
            header, callID: callID, timeoutMicros: timeoutMicros, payload: ByteBuffer(bytes: payload),
            repeating: previous)
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

    /// Entries equal to the previous request's at the same place go out as `same_as_previous`, as the
    /// generated encoder writes that, and a server's reader reads them back as the entries they repeat.
    /// A value differing in one byte, or the same value under another key, goes out in full.
    func testEntriesThePreviousRequestHadAtTheSamePlaceAreWrittenAsRepeats() throws {
        let token = "Bearer " + String(repeating: "eyJhbGciOiJFZERTQSJ9.", count: 14)
        var other = Array(token.utf8)
        other[other.count - 3] ^= 0x01
        let previous: Metadata = ["authorization": token, "request-id": "r-1", "x-a": "v"]
        let cases: [(metadata: Metadata, repeats: [Bool])] = [
            (["authorization": token, "request-id": "r-2", "x-a": "v"], [true, false, true]),
            (["authorization": String(decoding: other, as: UTF8.self)], [false]),
            (["x-a": "v", "authorization": token], [false, false]),
            (["authorization": token, "request-id": "r-1", "x-a": "v", "x-b": "v"], [true, true, true, false]),
            ([:], []),
        ]
        for (metadata, repeats) in cases {
            let header = RequestHeader(method: "/yedi.echo.Echo/Echo", metadata: metadata)
            let body = try written(header, callID: 5, payload: [1, 2], repeating: previous)
            let wire = zip(metadata.wire, repeats).map { entry, repeated in
                repeated ? YediRPC.MetadataEntry(sameAsPrevious: true) : entry
            }
            let expected = YediRPC.Frame(
                callID: 5, kind: .request, method: header.method, metadata: wire, payload: [1, 2])
            XCTAssertEqual(Array(body.readableBytesView), try generated(expected), "\(metadata)")

            var reader = InboundFrameReader()
            _ = try reader.read(try written(RequestHeader(method: header.method, metadata: previous), callID: 3))
            XCTAssertEqual(Array(try reader.read(body).metadata), Array(metadata), "read back: \(metadata)")
        }
    }

    /// The client and the server agree on which requests the server remembers: the client repeats
    /// entries of exactly those, and the server, having announced the same figure, accepts the repeats.
    func testTheClientRepeatsExactlyWhatTheServerRemembers() throws {
        let remembered = 400
        let key = "authorization"
        // Remembered up to 400 bytes as the limits count them: 32 + 13 (the key) + the value.
        let edge = remembered - WireLimits.metadataEntryOverhead - key.utf8.count
        var outcomes = Set<Bool>()
        for valueBytes in (edge - 8)...(edge + 8) {
            let metadata: Metadata = [key: String(repeating: "v", count: valueBytes)]
            var client = RememberedRequestMetadata()
            client.requestWritten(metadata)
            XCTAssertNil(client.previous, "before SETTINGS, nothing is repeated")
            client.rememberedBytes = remembered
            client.requestWritten(metadata)
            let header = RequestHeader(method: "/a/b", metadata: metadata)
            var server = InboundFrameReader(rememberedMetadataBytes: remembered)
            _ = try server.read(try written(header, callID: 1))
            let next = try written(header, callID: 2, repeating: client.previous)
            let fits = valueBytes <= edge
            outcomes.insert(fits)
            XCTAssertEqual(client.previous != nil, fits, "\(valueBytes) bytes")
            let repeats = try YediRPC.Frame(buffer: next).metadata.filter(\.sameAsPrevious).count
            XCTAssertEqual(repeats, fits ? 1 : 0, "\(valueBytes) bytes")
            XCTAssertEqual(Array(try server.read(next).metadata), Array(metadata))
        }
        XCTAssertEqual(outcomes, [true, false], "both sides of the edge were tried")
        var silent = RememberedRequestMetadata()
        silent.rememberedBytes = 0
        silent.requestWritten(["k": "v"])
        XCTAssertNil(silent.previous, "a server that announced nothing is sent every entry")
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
