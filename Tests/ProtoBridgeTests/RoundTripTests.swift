import NIOCore
import ProtoBridge
import ProtoTestSupport
import RPCCore
import XCTest
import YediProto

/// Every generated message type, filled in every field, survives encode → decode through protobuf-c.
final class RoundTripTests: XCTestCase {
    static let generatedTypes: [any ProtoMessage.Type] = RPCCoreCatalog.messageTypes + YediProtoCatalog.messageTypes
    static let generatedEnums: [any ProtoEnum.Type] = RPCCoreCatalog.enumTypes + YediProtoCatalog.enumTypes

    /// The catalogs list exactly the messages protoc-c compiled, so no type escapes the round trip.
    func testCatalogsCoverEveryCompiledMessageAndEnum() {
        let compiled = Set(MessageSchema.all.map(\.fullName))
        let generated = Set(Self.generatedTypes.map { $0.schema.fullName })
        XCTAssertEqual(compiled, generated)
        XCTAssertGreaterThan(compiled.count, 80)
        XCTAssertEqual(Set(EnumSchema.all.map(\.fullName)), Set(Self.generatedEnums.map { $0.schema.fullName }))
    }

    func testEveryMessageTypeRoundTripsWithEveryFieldSet() throws {
        for type in Self.generatedTypes {
            try assertRoundTrip(type)
        }
    }

    private func assertRoundTrip<M: ProtoMessage>(_: M.Type, file: StaticString = #filePath, line: UInt = #line) throws
    {
        let schema = M.schema
        let variants = SampleMessages.variants(of: schema)
        var oneofMembersSeen: Set<Int> = []
        for (index, sample) in variants.enumerated() {
            let context = "\(schema.fullName) variant \(index)"
            // Every field outside oneofs is set; exactly one member of each oneof is.
            for field in schema.fields {
                if field.oneofID == nil {
                    XCTAssertNotNil(sample[field.number], "\(context): \(field.name) unset", file: file, line: line)
                } else if sample[field.number] != nil {
                    oneofMembersSeen.insert(field.number)
                }
            }

            let bytes = try sample.serializedBytes()
            let typed = try M(serializedBytes: bytes)
            if !schema.fields.isEmpty {
                XCTAssertNotEqual(
                    typed, try M(serializedBytes: []), "\(context): decoded as the default", file: file, line: line)
            }
            let reencoded = try typed.serializedBytes()
            XCTAssertEqual(
                try M(serializedBytes: reencoded), typed, "\(context): typed round trip", file: file, line: line)
            // Back through the descriptor: the generated code lost nothing that was on the wire.
            XCTAssertEqual(
                try DynamicMessage(schema: schema, serializedBytes: reencoded), sample,
                "\(context): a field was lost or changed by the generated code", file: file, line: line)
        }
        let oneofMembers = Set(schema.fields.filter { $0.oneofID != nil }.map(\.number))
        XCTAssertEqual(
            oneofMembersSeen, oneofMembers, "\(schema.fullName): oneof members not covered", file: file, line: line)
    }

    func testEnumsKeepUnknownValues() throws {
        for type in Self.generatedEnums {
            assertEnumCases(type)
        }
        let user = YediAccount.User(id: "u", role: .init(rawValue: 77))
        XCTAssertEqual(user.role, .unrecognized(77))
        let decoded = try YediAccount.User(serializedBytes: user.serializedBytes())
        XCTAssertEqual(decoded.role, .unrecognized(77))
        XCTAssertEqual(decoded.role.rawValue, 77)
    }

    private func assertEnumCases<E: ProtoEnum>(_: E.Type) {
        XCTAssertEqual(E.knownCases.map(\.rawValue), E.schema.values.map(\.number), "\(E.schema.fullName)")
        for known in E.knownCases {
            XCTAssertEqual(E(rawValue: known.rawValue), known)
        }
        XCTAssertEqual(E(rawValue: 424_242).rawValue, 424_242)
        XCTAssertFalse(E.knownCases.contains(E(rawValue: 424_242)))
    }

    func testBytesEmptyAndOneMebibyteAndIntegerExtremes() throws {
        for payload in [[], SampleMessages.oneMebibyte, [0, 0, 0]] as [[UInt8]] {
            let request = YediEcho.EchoRequest(payload: payload, text: "")
            XCTAssertEqual(try YediEcho.EchoRequest(serializedBytes: request.serializedBytes()), request)
        }
        for value in [Int64.min, -1, 0, 1, Int64.max] {
            let response = YediEcho.EchoResponse(sequence: value)
            XCTAssertEqual(try YediEcho.EchoResponse(serializedBytes: response.serializedBytes()).sequence, value)
        }
        let frame = YediRPC.Frame(callID: .max, timeoutMicros: .max, windowBytes: .max, lastCallID: 1)
        XCTAssertEqual(try YediRPC.Frame(serializedBytes: frame.serializedBytes()), frame)
    }

    func testNestedRepeatedAndOneofTypedValues() throws {
        let message = YediChat.ChatMessage(
            id: "m-1", roomID: "r-1", senderID: "u-1", sentAtMs: 1_697_778_000_000,
            body: .postShare(
                .init(
                    postID: "p-1", postTitle: "레이어드컷 추천 💇",
                    firstPhoto: .init(id: "img", url: "https://yedi.example/img", width: 1080, height: 1350),
                    text: "이 게시물 보고 상담하러 왔어요")),
            readByRecipient: true)
        XCTAssertEqual(try YediChat.ChatMessage(serializedBytes: message.serializedBytes()), message)

        let page = YediContent.FeedPage(
            posts: (0..<3).map { index in
                YediContent.Post(
                    id: "p\(index)", title: "펌 \(index)", photos: [.init(id: "a"), .init(id: "b")], likeCount: -1)
            },
            page: .init(nextCursor: "next"))
        let decoded = try YediContent.FeedPage(serializedBytes: page.serializedBytes())
        XCTAssertEqual(decoded, page)
        XCTAssertEqual(decoded.posts.map(\.photos.count), [2, 2, 2])
    }

    func testByteBufferEncodingMatchesArrayEncoding() throws {
        let user = YediAccount.User(id: "u-1", name: "김예디", phone: "01012345678")
        var buffer = ByteBufferAllocator().buffer(capacity: 0)
        buffer.writeInteger(UInt32(7))
        let written = try user.serialize(into: &buffer)
        XCTAssertEqual(written, try user.serializedSize())
        buffer.moveReaderIndex(forwardBy: 4)
        XCTAssertEqual(Array(buffer.readableBytesView), try user.serializedBytes())
        XCTAssertEqual(try YediAccount.User(buffer: buffer), user)
    }
}
