import ProtoBridge
import ProtoJSON
import RPCCore
import XCTest
import YediProto

/// Everything proto3's JSON mapping lets a writer choose, read back as the same message.
final class InputAcceptanceTests: XCTestCase {
    func testOriginalProtoNamesAndJSONNames() throws {
        let expected = YediAccount.User(
            profileImageID: "img", favouriteStyle: "펌", createdAtMs: 5)
        XCTAssertEqual(
            try decode(
                #"{"profile_image_id":"img","favourite_style":"펌","created_at_ms":"5"}"#, as: YediAccount.User.self),
            expected)
        XCTAssertEqual(
            try decode(#"{"profileImageId":"img","favourite_style":"펌","createdAtMs":5}"#, as: YediAccount.User.self),
            expected)
    }

    func testInt64AsStringsOrNumbers() throws {
        for json in [
            #"{"sequence":"9223372036854775807"}"#, #"{"sequence":9223372036854775807}"#,
            #"{"sequence":9.223372036854775807e18}"#, #"{"sequence":"9223372036854775807.0"}"#,
        ] {
            XCTAssertEqual(try decode(json, as: YediEcho.EchoResponse.self).sequence, .max, json)
        }
        for (literal, value) in [
            ("-9223372036854775808", Int64.min), ("\"-9223372036854775808\"", .min), ("1e3", 1000), ("\"1E3\"", 1000),
            ("-0", 0), ("0.0", 0), ("120e-1", 12), ("1.5e1", 15), ("0e99999999999999999999", 0),
        ] {
            XCTAssertEqual(
                try decode(#"{"sequence":\#(literal)}"#, as: YediEcho.EchoResponse.self).sequence, value, literal)
        }
        XCTAssertEqual(
            try decode(#"{"callId":18446744073709551615,"lastCallId":"18446744073709551615"}"#, as: YediRPC.Frame.self),
            YediRPC.Frame(callID: .max, lastCallID: .max))
    }

    func testInt32AsNumbersOrNumericStrings() throws {
        let expected = YediCommon.LocalDate(year: 2025, month: -1, day: 2_147_483_647)
        XCTAssertEqual(
            try decode(#"{"year":"2025","month":"-1","day":"2147483647"}"#, as: YediCommon.LocalDate.self), expected)
        XCTAssertEqual(
            try decode(#"{"year":2025,"month":-1,"day":2147483647}"#, as: YediCommon.LocalDate.self), expected)
        XCTAssertEqual(
            try decode(#"{"year":2.025e3,"month":-1.0,"day":"2147483647"}"#, as: YediCommon.LocalDate.self), expected)
        XCTAssertEqual(try decode(#"{"code":4294967295}"#, as: YediRPC.Status.self).code, .max)
    }

    func testFloatingPointAsNumbersStringsAndSpecialValues() throws {
        for (json, value) in [
            ("1", 1.0), ("\"2.5\"", 2.5), ("-1e-3", -0.001), ("\"Infinity\"", .infinity), ("\"-Infinity\"", -.infinity),
        ] as [(String, Double)] {
            XCTAssertEqual(try decode(#"{"rating":\#(json)}"#, as: YediAccount.ReviewSummary.self).rating, value, json)
        }
        XCTAssertTrue(try decode(#"{"rating":"NaN"}"#, as: YediAccount.ReviewSummary.self).rating.isNaN)
    }

    func testBase64StandardAndURLSafePaddedOrNot() throws {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF, 0x00, 0x10]
        for base64 in ["+/+/ABA=", "+/+/ABA", "-_-_ABA=", "-_-_ABA"] {
            XCTAssertEqual(
                try decode(#"{"payload":"\#(base64)"}"#, as: YediEcho.EchoRequest.self).payload, bytes, base64)
        }
        XCTAssertEqual(try decode(#"{"payload":"AA"}"#, as: YediEcho.EchoRequest.self).payload, [0])
        XCTAssertEqual(try decode(#"{"payload":"AAE"}"#, as: YediEcho.EchoRequest.self).payload, [0, 1])
        XCTAssertEqual(try decode(#"{"payload":""}"#, as: YediEcho.EchoRequest.self).payload, [])
    }

    func testEnumsByNameOrNumber() throws {
        XCTAssertEqual(try decode(#"{"role":"ROLE_DESIGNER"}"#, as: YediAccount.User.self).role, .designer)
        XCTAssertEqual(try decode(#"{"role":2}"#, as: YediAccount.User.self).role, .designer)
        XCTAssertEqual(try decode(#"{"role":77}"#, as: YediAccount.User.self).role, .unrecognized(77))
        XCTAssertEqual(try decode(#"{"role":-2147483648}"#, as: YediAccount.User.self).role, .unrecognized(.min))
        XCTAssertEqual(
            try decode(#"{"keywords":["REVIEW_KEYWORD_UNSPECIFIED",3,99]}"#, as: YediContent.Review.self).keywords,
            [.init(rawValue: 0), .init(rawValue: 3), .unrecognized(99)])
    }

    func testNullMeansUnsetForEveryKindOfField() throws {
        let json = #"""
            {"user":null,"description":null,"skills":null,"rank":null,"reviews":null,"followerCount":null,"shop":null}
            """#
        XCTAssertEqual(try decode(json, as: YediAccount.Designer.self), YediAccount.Designer())
        // A double (and an int64 beside it) inside a message that is itself set.
        XCTAssertEqual(
            try decode(#"{"reviews":{"rating":null,"reviewCount":null}}"#, as: YediAccount.Designer.self),
            YediAccount.Designer(reviews: .init()))
        // A null oneof member leaves the oneof free for another member.
        XCTAssertEqual(
            try decode(#"{"text":null,"image":{},"reservation":null}"#, as: YediChat.ChatMessage.self).body,
            .image(.init()))
    }

    func testWhitespaceByteOrderMarkAndBytesInput() throws {
        let json = " \t\r\n{ \"year\" :\n 1990 ,\"month\":3 } \n"
        let expected = YediCommon.LocalDate(year: 1990, month: 3)
        XCTAssertEqual(try decode(json, as: YediCommon.LocalDate.self), expected)
        let bytes = [0xEF, 0xBB, 0xBF] + Array(json.utf8)
        let message = try ProtoJSONDecoder().decode(utf8: bytes, as: YediCommon.LocalDate.schema)
        XCTAssertEqual(try YediCommon.LocalDate(serializedBytes: message.serializedBytes()), expected)
    }

    func testBooleansAndDefaultsDecodeToUnset() throws {
        XCTAssertEqual(try decode(#"{"following":true}"#, as: YediAccount.FollowResponse.self).following, true)
        let explicitDefaults = #"{"id":"","role":"ROLE_UNSPECIFIED","createdAtMs":"0","birthDate":null}"#
        XCTAssertEqual(
            try ProtoJSONDecoder().decode(explicitDefaults, as: YediAccount.User.schema),
            DynamicMessage(schema: YediAccount.User.schema))
    }
}
