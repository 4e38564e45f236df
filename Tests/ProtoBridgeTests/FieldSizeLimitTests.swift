import ProtoBridge
import RPCCore
import XCTest
import YediProto

/// Every string, bytes and repeated field of every message a method receives is refused, naming the field
/// and its limit, when it is over its declared size (`max_bytes`, `max_items` in proto/access.proto) —
/// by the generated decoder, before any handler could see it.
final class FieldSizeLimitTests: XCTestCase {
    private static let generatedTypes: [String: any ProtoMessage.Type] = Dictionary(
        uniqueKeysWithValues: (RPCCoreCatalog.messageTypes + YediProtoCatalog.messageTypes).map {
            ($0.schema.fullName, $0)
        })

    /// One grapheme of 3.5 MB: "e" and 1.75 million combining acute accents (2 bytes each).
    private static let hugeGrapheme = "e" + String(repeating: "\u{301}", count: 1_750_000)

    private static var receivedTypes: [MessageSchema] {
        let services = RPCCoreCatalog.services + YediProtoCatalog.services
        let names = Set(services.flatMap(\.methods).map(\.requestType))
        return names.sorted().map { MessageSchema.named($0) }
    }

    func testTheHugeStringIsOneGraphemeOfMegabytes() {
        XCTAssertEqual(Self.hugeGrapheme.count, 1)
        XCTAssertEqual(Self.hugeGrapheme.utf8.count, 3_500_001)
    }

    func testAOneGraphemeMultiMegabyteStringInAnyTextFieldOfAnyRequestIsRefusedNamingTheField() throws {
        var checked = 0
        for schema in Self.receivedTypes {
            for (path, field) in Self.paths(in: schema) where field.type == .string {
                let value: DynamicValue = .string(Self.hugeGrapheme)
                let request = try Self.message(schema, setting: path, to: field.isRepeated ? .list([value]) : value)
                try assertRefused(request, path: path) { reason in
                    guard case .tooManyBytes(let limit, let actual) = reason else { return false }
                    return actual == 3_500_001 && limit <= 65_536
                }
                checked += 1
            }
        }
        XCTAssertGreaterThan(checked, 80, "fewer text fields than the protos have")
    }

    func testAnOversizedBytesFieldIsRefusedNamingTheField() throws {
        var checked = 0
        for schema in Self.receivedTypes {
            for (path, field) in Self.paths(in: schema) where field.type == .bytes {
                let value: DynamicValue = .bytes([UInt8](repeating: 7, count: 17 << 20))
                let request = try Self.message(schema, setting: path, to: field.isRepeated ? .list([value]) : value)
                try assertRefused(request, path: path) { reason in
                    if case .tooManyBytes = reason { return true }
                    return false
                }
                checked += 1
            }
        }
        XCTAssertGreaterThanOrEqual(checked, 2, "UploadImageRequest.data and EchoRequest.payload at least")
    }

    func testARepeatedFieldWithTooManyItemsIsRefusedNamingTheField() throws {
        var checked = 0
        for schema in Self.receivedTypes {
            for (path, field) in Self.paths(in: schema) where field.isRepeated {
                let item: DynamicValue =
                    switch field.type {
                    case .string: .string("x")
                    case .bytes: .bytes([1])
                    case .enum: .enumValue(1)
                    case .message: .message(DynamicMessage(schema: field.messageSchema!))
                    case .bool: .bool(true)
                    case .int64, .sint64, .sfixed64: .int64(1)
                    default: .int32(1)
                    }
                let request = try Self.message(
                    schema, setting: path, to: .list([DynamicValue](repeating: item, count: 10_001)))
                try assertRefused(request, path: path) { reason in
                    guard case .tooManyItems(_, let actual) = reason else { return false }
                    return actual == 10_001
                }
                checked += 1
            }
        }
        XCTAssertGreaterThan(checked, 15)
    }

    func testValuesAtTheirLimitDecode() throws {
        let request = YediChat.SendMessageRequest(
            roomID: String(repeating: "r", count: 128), body: .text(.init(text: String(repeating: "가", count: 2_666))))
        XCTAssertEqual(try YediChat.SendMessageRequest(serializedBytes: try request.serializedBytes()), request)
        let over = YediChat.SendMessageRequest(
            roomID: String(repeating: "r", count: 129), body: .text(.init(text: "hi")))
        XCTAssertThrowsError(try YediChat.SendMessageRequest(serializedBytes: try over.serializedBytes())) { error in
            XCTAssertEqual(
                (error as? ProtoDecodingError)?.sizeLimitText, "room_id: at most 128 bytes of UTF-8 (got 129)")
        }
    }

    // MARK: Helpers

    private func assertRefused(
        _ request: DynamicMessage, path: [String], file: StaticString = #filePath, line: UInt = #line,
        _ expected: (ProtoDecodingError.Reason) -> Bool
    ) throws {
        let name = "\(request.schema.fullName).\(path.joined(separator: "."))"
        let type = try XCTUnwrap(Self.generatedTypes[request.schema.fullName], name, file: file, line: line)
        let bytes = try request.serializedBytes()
        do {
            _ = try type.init(serializedBytes: bytes)
            XCTFail("\(name): an oversized value was decoded", file: file, line: line)
        } catch {
            XCTAssertEqual(error.fieldPath, path.joined(separator: "."), name, file: file, line: line)
            XCTAssertTrue(expected(error.reason), "\(name): \(error)", file: file, line: line)
            XCTAssertTrue(
                error.sizeLimitText?.hasPrefix("\(path.joined(separator: ".")): at most ") ?? false,
                "\(name): \(error.sizeLimitText ?? "no size text")", file: file, line: line)
        }
    }

    /// Every field reachable from `schema`, by its path of field names (message fields descended).
    private static func paths(in schema: MessageSchema, prefix: [String] = []) -> [([String], FieldSchema)] {
        schema.fields.flatMap { field -> [([String], FieldSchema)] in
            let path = prefix + [field.name]
            guard field.type == .message, !field.isRepeated, let nested = field.messageSchema else {
                return [(path, field)]
            }
            return [(path, field)] + paths(in: nested, prefix: path)
        }
    }

    /// `schema` with only the field at `path` set (and the messages on the way to it).
    private static func message(_ schema: MessageSchema, setting path: [String], to value: DynamicValue) throws
        -> DynamicMessage
    {
        var message = DynamicMessage(schema: schema)
        let field = try XCTUnwrap(schema.field(named: path[0]))
        if path.count == 1 {
            message.set(value, forField: field.number)
        } else {
            let nested = try Self.message(
                try XCTUnwrap(field.messageSchema), setting: Array(path.dropFirst()), to: value)
            message.set(.message(nested), forField: field.number)
        }
        return message
    }
}
