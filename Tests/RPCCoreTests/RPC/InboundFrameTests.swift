import Foundation
import NIOCore
import ProtoBridge
import XCTest

@testable import RPCCore

/// The hand-written frame reader against the generated decoder (protobuf-c): the same frames accepted,
/// with the same fields, the same ones refused; and the payload left in place.
final class InboundFrameTests: XCTestCase {
    private let samples: [YediRPC.Frame] = [
        YediRPC.Frame(
            callID: 7, kind: .request, method: "/yedi.echo.Echo/Echo",
            metadata: [
                .init(key: "authorization", value: "Bearer a.b.c"), .init(key: "traceparent", value: "00-ab-cd-01"),
                .init(key: "", value: ""),
            ],
            timeoutMicros: 1_500_000, payload: Array("hello, 예디 ✂️".utf8), windowBytes: 65_536),
        YediRPC.Frame(
            callID: UInt64.max, kind: .end, metadata: [.init(key: "retry-after", value: "1")],
            payload: [0, 1, 2, 0xFF], status: .init(code: 14, message: "다시 시도하세요")),
        YediRPC.Frame(kind: .goaway, status: .init(code: 0, message: ""), lastCallID: 1 << 40),
        YediRPC.Frame(kind: .settings, maxConcurrentCalls: 100, maxFrameBytes: 4 << 20, rememberedMetadataBytes: 2048),
        YediRPC.Frame(
            callID: 9, kind: .request, method: "/yedi.echo.Echo/Echo",
            metadata: [.init(sameAsPrevious: true), .init(key: "request-id", value: "r-2")]),
        YediRPC.Frame(kind: .ping, payload: [0x79, 0x65, 0x64, 0x69]),
        YediRPC.Frame(callID: 3, kind: .windowUpdate, windowBytes: UInt32.max),
        YediRPC.Frame(kind: .unrecognized(42)),
        YediRPC.Frame(),
    ]

    func testEveryFieldReadsAsTheGeneratedDecoderReadsIt() throws {
        for sample in samples where !sample.metadata.contains(where: \.sameAsPrevious) {
            let body = ByteBuffer(bytes: try sample.serializedBytes())
            let frame = try InboundFrame.read(body)
            XCTAssertEqual(Self.generated(frame), try YediRPC.Frame(buffer: body), "\(sample)")
            XCTAssertEqual(Self.generated(frame), sample)
        }
    }

    /// The payload is a view of the received bytes: decoding a frame copies none of it.
    func testThePayloadIsASliceOfTheReceivedBytes() throws {
        var received = ByteBuffer(bytes: [0xAA, 0xBB])  // bytes before the frame, as in a read
        received.moveReaderIndex(forwardBy: 2)
        received.writeBytes(try samples[0].serializedBytes())
        let frame = try InboundFrame.read(received)
        let bodyStart = received.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        let payloadStart = frame.payload.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        let payloadOffset = Array(received.readableBytesView).firstRange(of: Array("hello".utf8))!.lowerBound
        XCTAssertEqual(payloadStart, bodyStart + UInt(payloadOffset), "the payload was copied")
        XCTAssertEqual(Array(frame.payload.readableBytesView), samples[0].payload)
    }

    func testFieldsItDoesNotKnowAreSkippedAndRepeatedOnesFollowProtobufC() throws {
        var bytes = try YediRPC.Frame(callID: 1, kind: .request, method: "/a/b").serializedBytes()
        bytes += [0x60, 0x05]  // field 12, varint: unknown
        bytes += [0x6D, 1, 2, 3, 4]  // field 13, fixed32
        bytes += [0x71, 1, 2, 3, 4, 5, 6, 7, 8]  // field 14, fixed64
        bytes += [0x7A, 2, 0x41, 0x42]  // field 15, bytes
        bytes += [0x1A, 4] + Array("/c/d".utf8)  // method again: the last one counts
        bytes += [0x3A, 2, 0x08, 0x05]  // status { code: 5 }
        bytes += [0x3A, 3, 0x12, 1, 0x78]  // status { message: "x" }: merged, its code 0 is the last one's
        let body = ByteBuffer(bytes: bytes)
        let frame = try InboundFrame.read(body)
        XCTAssertEqual(frame.method, "/c/d")
        XCTAssertEqual(frame.status, YediRPC.Status(code: 0, message: "x"))
        XCTAssertEqual(Self.generated(frame), try YediRPC.Frame(buffer: body))

        // protobuf-c 1.4 merges a message field that occurs again: a message the last status leaves out
        // keeps its earlier value, one that is present (even empty) replaces it.
        let kept = ByteBuffer(bytes: bytes + [0x3A, 2, 0x08, 0x09])  // status { code: 9 }
        XCTAssertEqual(try InboundFrame.read(kept).status, YediRPC.Status(code: 9, message: "x"))
        XCTAssertEqual(try YediRPC.Frame(buffer: kept).status, YediRPC.Status(code: 9, message: "x"))
        let replaced = ByteBuffer(bytes: bytes + [0x3A, 4, 0x08, 0x09, 0x12, 0])  // status { code: 9, message: "" }
        XCTAssertEqual(try InboundFrame.read(replaced).status, YediRPC.Status(code: 9, message: ""))
        XCTAssertEqual(try YediRPC.Frame(buffer: replaced).status, YediRPC.Status(code: 9, message: ""))
    }

    /// A million empty metadata entries in one frame: the reader keeps the first ones and counts the
    /// rest (the server refuses the call by that count), instead of building a million objects.
    func testMetadataEntriesPastTheLimitAreCountedNotKept() throws {
        var bytes = try YediRPC.Frame(callID: 1, kind: .request, method: "/a/b").serializedBytes()
        for _ in 0..<1_000_000 { bytes += [0x22, 0x00] }
        let frame = try InboundFrame.read(ByteBuffer(bytes: bytes), maxMetadataEntries: 65)
        XCTAssertEqual(frame.metadata.count, 65)
        XCTAssertEqual(frame.metadataEntriesNotKept, 1_000_000 - 65)
        XCTAssertEqual(frame.metadataSize.entries, 1_000_000)
        XCTAssertThrowsError(try WireLimits.default.checkRequestMetadata(frame.metadataSize)) {
            XCTAssertEqual(($0 as? RPCError)?.message, "request metadata has 1000000 entries, more than 64")
        }
    }

    /// Metadata is read into the call's `Metadata` (keys lowercased), and counted as the limits count
    /// it, entries and bytes as sent, on the way.
    func testMetadataIsReadIntoTheCallsMetadataAndCountedOnTheWay() throws {
        let sent: [YediRPC.MetadataEntry] = [
            .init(key: "Authorization", value: "Bearer x"), .init(key: "request-id", value: "r1"),
            .init(key: "ÉTÉ", value: ""),
        ]
        let body = ByteBuffer(
            bytes: try YediRPC.Frame(callID: 1, kind: .request, method: "/a/b", metadata: sent).serializedBytes())
        let frame = try InboundFrame.read(body, maxMetadataEntries: 2)
        XCTAssertEqual(Array(frame.metadata.map(\.key)), ["authorization", "request-id"])
        XCTAssertEqual(frame.metadata["authorization"], "Bearer x")
        XCTAssertEqual(frame.metadataEntriesNotKept, 1)
        let bytes = sent.reduce(0) { $0 + WireLimits.metadataEntryOverhead + $1.key.utf8.count + $1.value.utf8.count }
        XCTAssertEqual(frame.metadataSize, MetadataSize(entries: 3, bytes: bytes))
        XCTAssertEqual(
            try InboundFrame.read(body).metadata.map(\.key), ["authorization", "request-id", "été"],
            "a key that is not ASCII is lowercased as String does")
    }

    /// A connection's reader shares the previous request's method string with a frame naming it again
    /// (same storage: no allocation), and still checks a method it has not seen.
    func testARepeatedMethodIsSharedAndANewOneIsStillChecked() throws {
        func body(_ method: [UInt8]) -> ByteBuffer {
            ByteBuffer(bytes: [0x08, 1, 0x1A, UInt8(method.count)] + method)
        }
        var reader = InboundFrameReader()
        let echo = Array("/yedi.echo.Echo/Echo".utf8)
        let first = try reader.read(body(echo)).method
        let again = try reader.read(body(echo)).method
        XCTAssertEqual(again, "/yedi.echo.Echo/Echo")
        let storage = { (text: String) in text.utf8.withContiguousStorageIfAvailable { $0.baseAddress } ?? nil }
        XCTAssertEqual(storage(first), storage(again), "the same string, not a copy")
        XCTAssertThrowsError(try reader.read(body([0x2F, 0xC3, 0x28])), "a new method is checked for UTF-8")
        XCTAssertThrowsError(try reader.read(body([0x2F, 0x61, 0x00])), "and for NUL")
        let other = try reader.read(body(Array("/yedi.echo.Echo/Expand".utf8))).method
        XCTAssertEqual(other, "/yedi.echo.Echo/Expand")
        let none = try reader.read(ByteBuffer(bytes: [0x08, 2])).method
        XCTAssertEqual(none, "", "a frame without a method has none, whatever came before")
    }

    /// A request repeating the previous one's metadata (a signed-in client's token on every call) shares
    /// its strings; a changed value is read and checked anew, and a frame too large to remember is not kept.
    func testRepeatedMetadataIsSharedAndAChangedValueIsStillChecked() throws {
        func request(_ entries: [(key: String, value: [UInt8])]) -> ByteBuffer {
            var frame = ByteBuffer(bytes: [0x10, UInt8(YediRPC.FrameKind.request.rawValue)])
            for (key, value) in entries {
                var entry = ByteBuffer(bytes: [0x0A])
                entry.writeVarint(UInt64(key.utf8.count))
                entry.writeString(key)
                entry.writeInteger(UInt8(0x12))
                entry.writeVarint(UInt64(value.count))
                entry.writeBytes(value)
                frame.writeInteger(UInt8(0x22))
                frame.writeVarint(UInt64(entry.readableBytes))
                frame.writeBuffer(&entry)
            }
            return frame
        }
        let storage = { (text: String) in text.utf8.withContiguousStorageIfAvailable { $0.baseAddress } ?? nil }
        let token = Array(("Bearer " + String(repeating: "t", count: 100)).utf8)
        var reader = InboundFrameReader()
        let first = try reader.read(request([("authorization", token)])).metadata
        let again = try reader.read(request([("authorization", token)])).metadata
        XCTAssertEqual(again["authorization"], String(decoding: token, as: UTF8.self))
        XCTAssertEqual(
            storage(try XCTUnwrap(first["authorization"])), storage(try XCTUnwrap(again["authorization"])),
            "the same string, not a copy")

        var changed = token
        changed[50] = 0xC3
        XCTAssertThrowsError(
            try reader.read(request([("authorization", changed)])), "a changed value is checked for UTF-8")
        changed[50] = 0
        XCTAssertThrowsError(try reader.read(request([("authorization", changed)])), "and for NUL")
        let other = try reader.read(request([("authorization", Array("Bearer other".utf8))])).metadata
        XCTAssertEqual(other["authorization"], "Bearer other")
        XCTAssertEqual(
            try reader.read(request([("authorization", Array("Bearer other".utf8))])).metadata["authorization"],
            "Bearer other")

        // A key longer than a small string's 15 bytes has storage of its own, shared too.
        let longKey = "x-yedi-a-rather-long-key"
        let keyed = try reader.read(request([(longKey, Array("1".utf8))])).metadata
        let keyedAgain = try reader.read(request([(longKey, Array("2".utf8))])).metadata
        XCTAssertEqual(keyedAgain[longKey], "2")
        XCTAssertEqual(
            storage(try XCTUnwrap(keyed.entries.first?.key)), storage(try XCTUnwrap(keyedAgain.entries.first?.key)))

        // Kept up to the limit as the limits count it (32 bytes per entry besides key and value), not past it.
        let limit = InboundFrameReader.maxRememberedMetadataBytes
        for (valueBytes, kept) in [(limit - WireLimits.metadataEntryOverhead - 1, true), (limit - 32, false)] {
            let entries = [(key: "k", value: [UInt8](repeating: UInt8(ascii: "x"), count: valueBytes))]
            let first = try reader.read(request(entries)).metadata
            let second = try reader.read(request(entries)).metadata
            XCTAssertEqual(second["k"]?.utf8.count, valueBytes)
            XCTAssertEqual(
                storage(try XCTUnwrap(first["k"])) == storage(try XCTUnwrap(second["k"])), kept,
                "\(valueBytes + 1 + WireLimits.metadataEntryOverhead) bytes kept: \(kept)")
        }
    }

    /// An entry marked `same_as_previous` is the previous request's entry at its place: the same
    /// strings, counted as they were. One with a key or value of its own, or with nothing to repeat
    /// (no previous request, one too large to remember, or fewer entries), is refused naming the field.
    func testAnEntrySameAsPreviousIsThePreviousRequestsEntry() throws {
        func request(_ metadata: [YediRPC.MetadataEntry]) throws -> ByteBuffer {
            ByteBuffer(bytes: try YediRPC.Frame(callID: 1, kind: .request, metadata: metadata).serializedBytes())
        }
        let token = "Bearer " + String(repeating: "t", count: 300)
        let same = YediRPC.MetadataEntry(sameAsPrevious: true)
        var reader = InboundFrameReader(rememberedMetadataBytes: 2048)
        let first = try reader.read(
            try request([.init(key: "authorization", value: token), .init(key: "n", value: "1")]))
        let second = try reader.read(try request([same, .init(key: "n", value: "2")]))
        XCTAssertEqual(second.metadata.wire, [.init(key: "authorization", value: token), .init(key: "n", value: "2")])
        XCTAssertEqual(second.metadataSize, first.metadataSize, "counted as the entry it repeats")
        let storage = { (text: String) in text.utf8.withContiguousStorageIfAvailable { $0.baseAddress } ?? nil }
        XCTAssertEqual(
            storage(try XCTUnwrap(first.metadata["authorization"])),
            storage(try XCTUnwrap(second.metadata["authorization"])), "the same string")
        let third = try reader.read(try request([same, same]))
        XCTAssertEqual(third.metadata.wire, second.metadata.wire, "a repeat of a repeat")

        func assertRefused(
            _ reader: inout InboundFrameReader, _ metadata: [YediRPC.MetadataEntry], _ why: String, line: UInt = #line
        ) throws {
            let body = try request(metadata)
            do throws(WireError) {
                _ = try reader.read(body)
                XCTFail("accepted: \(why)", line: line)
            } catch {
                guard case .malformedFrame(let decoding) = error, case .invalidValue = decoding.reason else {
                    return XCTFail("\(why): \(error)", line: line)
                }
                XCTAssertEqual(decoding.fieldPath, "metadata.same_as_previous", why, line: line)
            }
        }
        try assertRefused(&reader, [same, same, same], "nothing at the third place")
        try assertRefused(&reader, [.init(key: "authorization", value: "", sameAsPrevious: true)], "a key of its own")
        try assertRefused(&reader, [.init(key: "", value: "x", sameAsPrevious: true)], "a value of its own")
        var fresh = InboundFrameReader()
        try assertRefused(&fresh, [same], "no previous request")
        var small = InboundFrameReader(rememberedMetadataBytes: 300)
        _ = try small.read(try request([.init(key: "authorization", value: token)]))
        try assertRefused(&small, [same], "the previous request was too large to remember")
    }

    func testBadFramesAreRefusedNamingTheField() throws {
        let cases: [(bytes: [UInt8], path: String?, reason: ProtoDecodingError.Reason)] = [
            ([0x1A, 2, 0xC3, 0x28], "method", .invalidUTF8),
            ([0x22, 6, 0x0A, 1, 0x61, 0x12, 1, 0x00], "metadata.value", .stringContainsNUL),
            ([0x0A, 1, 0x00], "call_id", .wrongWireType(expected: 0, found: 2)),
            ([0x32, 5, 1, 2], "payload", .lengthPastEnd(declared: 5, available: 2)),
            ([0x08, 0x80], "call_id", .truncated),
            ([0x08] + [UInt8](repeating: 0xFF, count: 10) + [0x01], "call_id", .varintTooLong),
            ([0x0B], nil, .invalidWireType(3)),
            ([0x00], nil, .invalidFieldNumber(0)),
            ([0x88, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01], nil, .tagTooLong),  // call_id behind a 6-byte tag
            ([0x3A, 2, 0x0E, 0x00], "status", .invalidWireType(6)),
        ]
        for (bytes, path, reason) in cases {
            XCTAssertThrowsError(try YediRPC.Frame(serializedBytes: bytes), "\(bytes): protobuf-c's path accepts it")
            do {
                _ = try InboundFrame.read(ByteBuffer(bytes: bytes))
                XCTFail("\(bytes) was accepted")
            } catch {
                guard case .malformedFrame(let decoding) = error else { return XCTFail("\(error)") }
                XCTAssertEqual(decoding.fieldPath, path, "\(bytes)")
                XCTAssertEqual(decoding.reason, reason, "\(bytes)")
            }
        }
    }

    /// Mutants of real frames (bytes flipped, inserted, removed, cut short): the reader accepts exactly
    /// what the generated decoder accepts, and reads the same values. The frame fuzzer goes further.
    func testMutatedFramesAreReadAsTheGeneratedDecoderReadsThem() throws {
        var random = SplitMix64(seed: 0x59_45_44_49)
        var accepted = 0
        var refused = 0
        for round in 0..<20_000 {
            var bytes = try samples[round % samples.count].serializedBytes()
            for _ in 0..<(1 + Int(random.next() % 3)) {
                let position = bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count))
                switch random.next() % 4 {
                case 0 where !bytes.isEmpty: bytes[position] ^= UInt8(1 << (random.next() % 8))
                case 1: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: position)
                case 2 where !bytes.isEmpty: bytes.remove(at: position)
                default: bytes = Array(bytes.prefix(position))
                }
            }
            let body = ByteBuffer(bytes: bytes)
            let expected = (try? YediRPC.Frame(buffer: body)).flatMap(Self.readFresh)
            let actual = try? InboundFrame.read(body)
            XCTAssertEqual(actual.map(Self.generated), expected, "\(bytes)")
            if expected == nil { refused += 1 } else { accepted += 1 }
        }
        XCTAssertGreaterThan(accepted, 1_000, "the mutants exercise accepted frames")
        XCTAssertGreaterThan(refused, 1_000, "the mutants exercise refused frames")
    }

    /// Inputs on which the frame fuzzer found the two readers disagreeing (`Fuzz/fixtures/frame/`, each
    /// the fuzz input: the harness's read-size byte, then the frame's bytes).
    func testFuzzFindingsAreReadAsTheGeneratedDecoderReadsThem() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../Fuzz/fixtures/frame").standardized
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        XCTAssertFalse(names.isEmpty, "no fixtures in \(directory.path)")
        for name in names {
            let input = try Data(contentsOf: directory.appendingPathComponent(name))
            let body = ByteBuffer(bytes: input.dropFirst())
            let expected = Result { try YediRPC.Frame(buffer: body) }.map(Self.readFresh)
            let actual = Result { try InboundFrame.read(body) }.map(Self.generated)
            XCTAssertEqual(
                try? actual.get(), (try? expected.get()) ?? nil,
                "\(name): InboundFrame \(actual), protobuf-c \(expected)")
        }
    }

    /// What the reader makes of a frame the generated decoder read, with no previous request: metadata
    /// as `Metadata` keeps it, keys lowercased (the generated decoder keeps them as sent); nil, refused,
    /// when an entry is `same_as_previous`, as there is nothing to repeat.
    private static func readFresh(_ frame: YediRPC.Frame) -> YediRPC.Frame? {
        guard !frame.metadata.contains(where: \.sameAsPrevious) else { return nil }
        var frame = frame
        frame.metadata = frame.metadata.map { .init(key: $0.key.lowercased(), value: $0.value) }
        return frame
    }

    private static func generated(_ frame: InboundFrame) -> YediRPC.Frame {
        YediRPC.Frame(
            callID: frame.callID, kind: frame.kind, method: frame.method, metadata: frame.metadata.wire,
            timeoutMicros: frame.timeoutMicros, payload: Array(frame.payload.readableBytesView), status: frame.status,
            windowBytes: frame.windowBytes, lastCallID: frame.lastCallID, maxConcurrentCalls: frame.maxConcurrentCalls,
            maxFrameBytes: frame.maxFrameBytes, rememberedMetadataBytes: frame.rememberedMetadataBytes)
    }
}

/// A small deterministic generator, so a failing mutant is the same on every run.
private struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
