import Foundation
import ProtoTestSupport
import RPCCore
import XCTest
import YediProto

@testable import ProtoBridge

/// Whatever the bytes, decoding throws a `ProtoDecodingError` naming the type; it never crashes.
/// These tests also run under AddressSanitizer with leak detection in CI.
final class MalformedInputTests: XCTestCase {
    private func assertDecodeFails<M: ProtoMessage>(
        _ type: M.Type,
        _ bytes: [UInt8],
        _ reason: ProtoDecodingError.Reason,
        field: String? = nil,
        file: StaticString = #filePath,
        line: UInt = #line
    ) {
        do {
            let value = try M(serializedBytes: bytes)
            XCTFail("decoded \(value) from malformed bytes", file: file, line: line)
        } catch {
            XCTAssertEqual(error.messageType, M.schema.fullName, file: file, line: line)
            XCTAssertEqual(error.reason, reason, "\(error)", file: file, line: line)
            XCTAssertEqual(error.fieldPath, field, "\(error)", file: file, line: line)
        }
    }

    func testTruncatedInput() throws {
        let bytes = try YediAccount.User(id: "user-1", name: "김예디", createdAtMs: 1_700_000_000_000).serializedBytes()
        // Cut in the middle of the name's bytes, of a varint, and after a tag.
        assertDecodeFails(
            YediAccount.User.self, Array(bytes.prefix(12)), .lengthPastEnd(declared: 9, available: 2), field: "name")
        assertDecodeFails(
            YediAccount.User.self, Array(bytes.prefix(bytes.count - 1)), .truncated, field: "created_at_ms")
        assertDecodeFails(YediRPC.Frame.self, [0x08], .truncated, field: "call_id")
        assertDecodeFails(YediRPC.Frame.self, [0xA1, 0x01, 1, 2, 3], .truncated, field: "#20")
        // Every strict prefix either fails or stops cleanly at a field boundary; none crashes.
        var failures = 0
        for length in 0..<bytes.count {
            if (try? YediAccount.User(serializedBytes: Array(bytes.prefix(length)))) == nil { failures += 1 }
        }
        XCTAssertGreaterThan(failures, bytes.count / 2)
    }

    func testWrongWireType() {
        // Field 1 (id, a string) sent as a varint; field 10 (created_at_ms, int64) as a fixed32.
        assertDecodeFails(YediAccount.User.self, [0x08, 0x01], .wrongWireType(expected: 2, found: 0), field: "id")
        assertDecodeFails(
            YediAccount.User.self, [0x55, 1, 2, 3, 4], .wrongWireType(expected: 0, found: 5), field: "created_at_ms")
        assertDecodeFails(YediAccount.User.self, [0x0E], .invalidWireType(6))
        assertDecodeFails(YediAccount.User.self, [0x0B, 0x0C], .invalidWireType(3))
        assertDecodeFails(YediAccount.User.self, [0x00, 0x01], .invalidFieldNumber(0))
    }

    func testLengthPastTheEnd() {
        assertDecodeFails(
            YediAccount.User.self, [0x0A, 0x05, 0x41], .lengthPastEnd(declared: 5, available: 1), field: "id")
        assertDecodeFails(
            YediAccount.User.self, [0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F],
            .lengthPastEnd(declared: 0xFFFF_FFFF, available: 0),
            field: "id")
        // An unknown field (99) is skipped, but its length is still checked.
        assertDecodeFails(
            YediAccount.User.self, [0x9A, 0x06, 0x03, 0x41], .lengthPastEnd(declared: 3, available: 1), field: "#99")
        assertDecodeFails(
            YediAccount.User.self, [0x50] + [UInt8](repeating: 0xFF, count: 11), .varintTooLong, field: "created_at_ms")
    }

    /// Field 1 (`id`, "A") behind a 6-byte tag padded with zero bits: protobuf-c refuses tags over 5 bytes,
    /// so the validator does, with the reason (protobuf-c gives none). The frame fuzzer found the gap.
    func testATagLongerThanFiveBytes() {
        assertDecodeFails(
            YediAccount.User.self, [0x8A, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01, 0x41], .tagTooLong, field: nil)
        XCTAssertEqual(
            try YediAccount.User(serializedBytes: [0x8A, 0x80, 0x80, 0x80, 0x00, 0x01, 0x41]).id, "A",
            "a 5-byte tag is read")
    }

    func testInvalidUTF8() {
        let invalid: [[UInt8]] = [
            [0xC3, 0x28],  // bad continuation
            [0xC0, 0xAF],  // overlong "/"
            [0xE0, 0x80, 0xAF],  // overlong
            [0xED, 0xA0, 0x80],  // UTF-16 surrogate
            [0xF4, 0x90, 0x80, 0x80],  // above U+10FFFF
            [0xEA, 0xB9],  // truncated sequence
            [0xFF],
        ]
        for bytes in invalid {
            assertDecodeFails(YediAccount.User.self, [0x1A, UInt8(bytes.count)] + bytes, .invalidUTF8, field: "name")
        }
        // Inside nested and repeated messages, the error names the path.
        let nested: [UInt8] = [0x3A, 0x06, 0x0A, 0x04, 0x0A, 0x02, 0xC3, 0x28]  // shop (7) { name (1): <bad> }
        assertDecodeFails(YediAccount.Designer.self, nested, .invalidUTF8, field: "shop.name")
        let user: [UInt8] = [0x0A, 0x04, 0x1A, 0x02, 0xC3, 0x28]  // user (1) { name (3): <bad> }
        assertDecodeFails(YediAccount.Designer.self, user, .invalidUTF8, field: "user.name")
        let repeatedBytes: [UInt8] = [0x0A, 0x04, 0x1A, 0x02, 0xC3, 0x28]  // posts { title: <bad> }
        assertDecodeFails(YediContent.FeedPage.self, repeatedBytes, .invalidUTF8, field: "posts.title")
    }

    func testNULInStrings() throws {
        assertDecodeFails(YediAccount.User.self, [0x1A, 0x03, 0x41, 0x00, 0x42], .stringContainsNUL, field: "name")
        XCTAssertThrowsError(try YediAccount.User(name: "a\u{0}b").serializedBytes()) { error in
            let error = error as? ProtoEncodingError
            XCTAssertEqual(error?.reason, .stringContainsNUL)
            XCTAssertEqual(error?.fieldPath, "name")
            XCTAssertEqual(error?.messageType, "yedi.account.User")
        }
        XCTAssertThrowsError(
            try YediAccount.SignUpRequest(designer: .init(skills: ["ok", "bad\u{0}"])).serializedBytes()
        ) { error in
            XCTAssertEqual((error as? ProtoEncodingError)?.fieldPath, "designer.skills")
        }
    }

    func testUnknownFieldsAreSkipped() throws {
        let known = try YediAccount.User(id: "x").serializedBytes()
        let withUnknown = known + [0xF8, 0x07, 0x05] + [0x9A, 0x06, 0x01, 0x41] + [0xFD, 0x07, 1, 2, 3, 4]
        XCTAssertEqual(try YediAccount.User(serializedBytes: withUnknown), YediAccount.User(id: "x"))
    }

    func testRandomBytesNeverCrash() throws {
        var generator = SplitMix64(seed: 0x5EED)
        let types: [any ProtoMessage.Type] = [
            YediRPC.Frame.self, YediAccount.SignUpRequest.self, YediContent.FeedPage.self, YediChat.StreamEvent.self,
            YediBooking.Schedule.self,
        ]
        var decoded = 0
        var rejected = 0
        for index in 0..<10_000 {
            let length = Int(generator.next() % 64)
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            let type = types[index % types.count]
            if decodes(type, bytes) { decoded += 1 } else { rejected += 1 }
        }
        XCTAssertEqual(decoded + rejected, 10_000)
        XCTAssertGreaterThan(rejected, 5_000)
    }

    func testMutatedValidMessagesNeverCrash() throws {
        var generator = SplitMix64(seed: 42)
        let samples =
            try SampleMessages.variants(of: YediAccount.SignUpRequest.schema).map { try $0.serializedBytes() }
            + [
                try YediContent.FeedPage(posts: [.init(id: "p", title: "제목", photos: [.init(id: "i")])])
                    .serializedBytes()
            ]
        var rejected = 0
        for index in 0..<5_000 {
            var bytes = samples[index % samples.count]
            guard !bytes.isEmpty else { continue }
            for _ in 0..<(1 + generator.next() % 4) {
                let position = Int(generator.next() % UInt64(bytes.count))
                bytes[position] ^= UInt8(truncatingIfNeeded: generator.next() | 1)
            }
            let types: [any ProtoMessage.Type] = [YediAccount.SignUpRequest.self, YediContent.FeedPage.self]
            let type = types[index % samples.count == samples.count - 1 ? 1 : 0]
            if !decodes(type, bytes) { rejected += 1 }
        }
        XCTAssertGreaterThan(rejected, 0)
    }

    private func decodes<M: ProtoMessage>(_: M.Type, _ bytes: [UInt8]) -> Bool {
        do {
            _ = try M(serializedBytes: bytes)
            return true
        } catch {
            XCTAssertEqual(error.messageType, M.schema.fullName)
            return false
        }
    }

    /// Our validator agrees with the standard library's UTF-8 validation on random input.
    func testUTF8ValidationMatchesTheStandardLibrary() {
        var generator = SplitMix64(seed: 7)
        for _ in 0..<20_000 {
            let length = Int(generator.next() % 24)
            let bytes = (0..<length).map { _ -> UInt8 in
                let raw = generator.next()
                // Bias towards multi-byte lead and continuation bytes.
                return raw % 3 == 0
                    ? UInt8(truncatingIfNeeded: raw >> 8) : UInt8(0x80 | (raw >> 16) & 0x7F) | (raw % 2 == 0 ? 0x40 : 0)
            }
            let expectedValid = String(validating: bytes, as: UTF8.self) != nil
            let result = bytes.withUnsafeBytes { UTF8Validation.check($0) }
            switch result {
            case .valid: XCTAssertTrue(expectedValid && !bytes.contains(0), "\(bytes)")
            case .containsNUL: XCTAssertTrue(expectedValid && bytes.contains(0), "\(bytes)")
            case .invalid: XCTAssertFalse(expectedValid, "\(bytes)")
            }
        }
    }
}
