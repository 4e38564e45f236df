import ProtoBridge
import ProtoJSON
import ProtoTestSupport
import RPCCore
import XCTest
import YediProto

/// Every message type, in every sample variant, survives DynamicMessage → JSON → DynamicMessage, and the
/// generated types survive the trip through bytes and JSON.
final class RoundTripTests: XCTestCase {
    static let generatedTypes: [any ProtoMessage.Type] = RPCCoreCatalog.messageTypes + YediProtoCatalog.messageTypes

    /// A type added to proto/ without a catalog entry would silently skip the typed round trip.
    func testEverySchemaIsInTheCatalogs() {
        let compiled = Set(MessageSchema.all.map(\.fullName))
        XCTAssertEqual(compiled, Set(Self.generatedTypes.map { $0.schema.fullName }))
        XCTAssertEqual(compiled.count, MessageSchema.all.count)
        XCTAssertGreaterThan(compiled.count, 80)
    }

    func testEverySchemaAndVariantRoundTripsThroughJSON() throws {
        let encoders = [
            ProtoJSONEncoder(),
            ProtoJSONEncoder(style: .pretty),
            ProtoJSONEncoder(emitDefaults: true),
            ProtoJSONEncoder(style: .pretty, emitDefaults: true),
        ]
        let decoder = ProtoJSONDecoder()
        var variantCount = 0
        for schema in MessageSchema.all {
            for (index, sample) in SampleMessages.variants(of: schema).enumerated() {
                variantCount += 1
                for encoder in encoders {
                    let json = try encoder.encode(sample)
                    let decoded = try decoder.decode(json, as: schema)
                    XCTAssertEqual(decoded, sample, "\(schema.fullName) variant \(index), \(encoder)")
                    // Canonical output is stable: encoding the decoded message gives the same text.
                    XCTAssertEqual(try encoder.encode(decoded), json, "\(schema.fullName) variant \(index)")
                }
            }
            // The empty message: nothing, or every non-oneof field at its default.
            let empty = DynamicMessage(schema: schema)
            XCTAssertEqual(try ProtoJSONEncoder().encode(empty), "{}")
            let withDefaults = try ProtoJSONEncoder(emitDefaults: true).encode(empty)
            XCTAssertEqual(try decoder.decode(withDefaults, as: schema), empty, schema.fullName)
        }
        XCTAssertGreaterThan(variantCount, 240)
    }

    /// typed → bytes → DynamicMessage → JSON → DynamicMessage → bytes → typed, for every generated type.
    func testEveryGeneratedTypeRoundTripsThroughBytesAndJSON() throws {
        for type in Self.generatedTypes {
            try assertTypedRoundTrip(type)
        }
    }

    private func assertTypedRoundTrip<M: ProtoMessage>(_: M.Type) throws {
        for (index, sample) in SampleMessages.variants(of: M.schema).enumerated() {
            let typed = try M(serializedBytes: sample.serializedBytes())
            let dynamic = try DynamicMessage(schema: M.schema, serializedBytes: typed.serializedBytes())
            let json = try ProtoJSONEncoder().encode(dynamic)
            let fromJSON = try ProtoJSONDecoder().decode(json, as: M.schema)
            XCTAssertEqual(
                try M(serializedBytes: fromJSON.serializedBytes()), typed, "\(M.schema.fullName) variant \(index)")
        }
    }

    func testInt64AndUInt64ExtremesAreStrings() throws {
        for value in [Int64.min, -1, 0, 1, Int64.max] {
            let json = try encode(YediEcho.EchoResponse(sequence: value))
            XCTAssertEqual(json, value == 0 ? "{}" : #"{"sequence":"\#(value)"}"#)
            XCTAssertEqual(try decode(json, as: YediEcho.EchoResponse.self).sequence, value)
        }
        let frame = YediRPC.Frame(callID: .max, timeoutMicros: 1 << 63, windowBytes: .max, lastCallID: 1)
        let json = try encode(frame)
        XCTAssertEqual(
            json,
            #"{"callId":"18446744073709551615","timeoutMicros":"9223372036854775808","windowBytes":4294967295,"#
                + #""lastCallId":"1"}"#)
        XCTAssertEqual(try decode(json, as: YediRPC.Frame.self), frame)
    }

    func testOneMebibyteOfBytesIsPaddedBase64() throws {
        let request = YediEcho.EchoRequest(payload: SampleMessages.oneMebibyte, text: "")
        let json = try encode(request)
        let base64Length = (SampleMessages.oneMebibyte.count + 2) / 3 * 4
        XCTAssertEqual(json.utf8.count, #"{"payload":""}"#.utf8.count + base64Length)
        XCTAssertTrue(json.hasSuffix(#"=="}"#), "1 MiB is not a multiple of 3 bytes, so it ends in padding")
        XCTAssertEqual(try decode(json, as: YediEcho.EchoRequest.self), request)

        for (bytes, base64) in [
            ([], ""), ([0], "AA=="), ([0, 1], "AAE="), ([0, 1, 2], "AAEC"), ([0xFB, 0xFF], "+/8="),
        ]
            as [([UInt8], String)]
        {
            let message = YediEcho.EchoRequest(payload: bytes, text: "t")
            XCTAssertEqual(
                try encode(message), bytes.isEmpty ? #"{"text":"t"}"# : #"{"payload":"\#(base64)","text":"t"}"#)
            XCTAssertEqual(try decode(#"{"payload":"\#(base64)","text":"t"}"#, as: YediEcho.EchoRequest.self), message)
        }
    }

    func testEnumsByNameAndUnknownNumbersByNumber() throws {
        let known = YediAccount.User(id: "u", role: .designer, gender: .female)
        XCTAssertEqual(try encode(known), #"{"id":"u","role":"ROLE_DESIGNER","gender":"GENDER_FEMALE"}"#)
        XCTAssertEqual(try decode(try encode(known), as: YediAccount.User.self), known)

        let unknown = YediAccount.User(role: .unrecognized(77), gender: .unrecognized(-5))
        XCTAssertEqual(try encode(unknown), #"{"role":77,"gender":-5}"#)
        XCTAssertEqual(try decode(try encode(unknown), as: YediAccount.User.self), unknown)

        let review = YediContent.CreateReviewRequest(keywords: [
            .init(rawValue: 1), .unrecognized(12_345), .init(rawValue: 0),
        ])
        let json = try encode(review)
        XCTAssertTrue(json.contains(#""keywords":[""#), json)
        XCTAssertTrue(json.contains(#",12345,"REVIEW_KEYWORD_UNSPECIFIED"]"#), json)
        XCTAssertEqual(try decode(json, as: YediContent.CreateReviewRequest.self), review)
    }

    func testNestedRepeatedAndOneofFields() throws {
        let message = YediChat.ChatMessage(
            id: "m-1", sentAtMs: 1_697_778_000_000,
            body: .postShare(
                .init(postID: "p-1", postTitle: "레이어드컷 추천 💇", firstPhoto: .init(id: "img", width: 1080), text: "")))
        let json = try encode(message)
        XCTAssertEqual(
            json,
            #"{"id":"m-1","sentAtMs":"1697778000000","postShare":{"postId":"p-1","postTitle":"레이어드컷 추천 💇","#
                + #""firstPhoto":{"id":"img","width":1080}}}"#)
        XCTAssertEqual(try decode(json, as: YediChat.ChatMessage.self), message)

        let schedule = YediBooking.Schedule(
            breaks: [.init(startMinute: 720, endMinute: -1), .init()],
            closedDays: [.init(year: 2025, month: 1, day: 1), .init()], closedWeekdays: [.monday])
        let scheduleJSON = try encode(schedule)
        XCTAssertEqual(
            scheduleJSON,
            #"{"breaks":[{"startMinute":720,"endMinute":-1},{}],"closedDays":[{"year":2025,"month":1,"day":1},{}],"#
                + #""closedWeekdays":["WEEKDAY_MONDAY"]}"#)
        XCTAssertEqual(try decode(scheduleJSON, as: YediBooking.Schedule.self), schedule)
        let menu = YediBooking.Menu(styles: [.init(id: "s", name: "펌", category: .perm, priceKRW: 80_000)])
        let menuJSON = try encode(menu)
        XCTAssertEqual(
            menuJSON, #"{"styles":[{"id":"s","name":"펌","category":"HAIR_CATEGORY_PERM","priceKrw":"80000"}]}"#)
        XCTAssertEqual(try decode(menuJSON, as: YediBooking.Menu.self), menu)
    }

    /// A oneof member set to its default is still set, so it is written even without `emitDefaults`.
    func testOneofMemberWithDefaultValueIsWritten() throws {
        // The oneof alone in its message: only the member set is written, and nothing when none is.
        let request = YediAccount.RecordRecentSearchRequest(entry: .query(""))
        XCTAssertEqual(try encode(request), #"{"query":""}"#)
        XCTAssertEqual(try decode(#"{"query":""}"#, as: YediAccount.RecordRecentSearchRequest.self), request)
        let designer = YediAccount.RecordRecentSearchRequest(entry: .designerID(""))
        XCTAssertEqual(try encode(designer), #"{"designerId":""}"#)
        XCTAssertEqual(try decode(#"{"designerId":""}"#, as: YediAccount.RecordRecentSearchRequest.self), designer)
        XCTAssertEqual(try encode(YediAccount.RecordRecentSearchRequest(), emitDefaults: true), "{}")
        XCTAssertEqual(try encode(YediAccount.RecordRecentSearchRequest()), "{}")
        // Beside other fields: `emitDefaults` writes those, still no oneof member.
        let search = YediAccount.RecentSearch(entry: .query(""))
        XCTAssertEqual(try encode(search), #"{"query":""}"#)
        XCTAssertEqual(try decode(#"{"query":""}"#, as: YediAccount.RecentSearch.self), search)
        XCTAssertEqual(try encode(search, emitDefaults: true), #"{"id":"","query":"","searchedAtMs":"0"}"#)
        XCTAssertEqual(try encode(YediAccount.RecentSearch(), emitDefaults: true), #"{"id":"","searchedAtMs":"0"}"#)
    }

    func testKoreanTextAndEmojiStayUTF8() throws {
        let text = "예디 헤어 ✂️💇‍♀️ 🙌😎💚🌹💪"
        let json = try encode(YediEcho.EchoRequest(payload: [], text: text))
        XCTAssertEqual(json, #"{"text":"\#(text)"}"#)
        XCTAssertFalse(json.contains("\\u"))
        XCTAssertEqual(try decode(json, as: YediEcho.EchoRequest.self).text, text)
        // The same text written with \u escapes (surrogate pairs for the emoji) reads back the same.
        let escaped = text.unicodeScalars.map { scalar -> String in
            String(scalar).utf16.map { "\\u" + String(0x10000 + Int($0), radix: 16, uppercase: true).dropFirst() }
                .joined()
        }.joined()
        XCTAssertEqual(try decode(#"{"text":"\#(escaped)"}"#, as: YediEcho.EchoRequest.self).text, text)
    }

    func testEmitDefaultsWritesEveryNonOneofField() throws {
        let json = try encode(YediAccount.User(), emitDefaults: true)
        XCTAssertEqual(
            json,
            #"{"id":"","role":"ROLE_UNSPECIFIED","name":"","email":"","phone":"","gender":"GENDER_UNSPECIFIED","#
                + #""birthDate":null,"profileImageId":"","favouriteStyle":"","createdAtMs":"0"}"#)
        XCTAssertEqual(try decode(json, as: YediAccount.User.self), YediAccount.User())

        let schedule = try encode(YediBooking.Schedule(), emitDefaults: true)
        XCTAssertEqual(
            schedule,
            #"{"designerId":"","openingMinute":0,"closingMinute":0,"timeZone":"","breaks":[],"closedDays":[],"#
                + #""closedWeekdays":[],"slotMinutes":0}"#)
        let echo = try encode(YediEcho.EchoRequest(payload: [], text: ""), emitDefaults: true)
        XCTAssertEqual(echo, #"{"payload":"","text":""}"#)
        XCTAssertEqual(try encode(YediAccount.Shop(), emitDefaults: true).contains(#""latitude":0,"#), true)
    }
}

// MARK: Helpers shared by the test files

func dynamic<M: ProtoMessage>(_ message: M) throws -> DynamicMessage {
    try DynamicMessage(schema: M.schema, serializedBytes: message.serializedBytes())
}

func encode<M: ProtoMessage>(
    _ message: M, style: ProtoJSONEncoder.Style = .compact, emitDefaults: Bool = false
) throws -> String {
    try ProtoJSONEncoder(style: style, emitDefaults: emitDefaults).encode(dynamic(message))
}

func decode<M: ProtoMessage>(_ json: String, as _: M.Type) throws -> M {
    try M(serializedBytes: ProtoJSONDecoder().decode(json, as: M.schema).serializedBytes())
}
