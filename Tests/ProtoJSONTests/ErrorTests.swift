import ProtoBridge
import ProtoJSON
import RPCCore
import XCTest
import YediProto

/// Every refusal says what is wrong and where, in words a person at the probe's prompt can act on.
final class ErrorTests: XCTestCase {
    // MARK: Syntax

    func testSyntaxErrorHasLineColumnAndByteOffset() throws {
        let json = """
            {
              "year": 1990,
              "month" 3
            }
            """
        let error = try failure(json, as: YediCommon.LocalDate.self)
        XCTAssertEqual(error.position, JSONPosition(line: 3, column: 11, byteOffset: 28))
        XCTAssertTrue(error.isSyntaxError)
        XCTAssertEqual(
            error.description,
            #"JSON syntax error at line 3, column 11 (byte offset 28): expected ':' after the key "month", found '3'"#)
    }

    func testColumnsCountCharactersNotBytes() throws {
        let error = try failure(#"{"name":"김예디",  ]"#, as: YediAccount.User.self)
        XCTAssertEqual(error.position, JSONPosition(line: 1, column: 17, byteOffset: 22))
        XCTAssertEqual(
            error.description,
            "JSON syntax error at line 1, column 17 (byte offset 22): expected a string key in double quotes, found ']'"
        )
    }

    func testTrailingCommas() throws {
        XCTAssertEqual(
            try failure(#"{"year":1,}"#, as: YediCommon.LocalDate.self).description,
            "JSON syntax error at line 1, column 11 (byte offset 10): a trailing comma before '}' is not allowed")
        XCTAssertEqual(
            try failure(#"{"closedWeekdays":[1,2, ]}"#, as: YediBooking.Schedule.self).description,
            "JSON syntax error at line 1, column 25 (byte offset 24): a trailing comma before ']' is not allowed")
    }

    func testDuplicateKey() throws {
        let error = try failure(#"{"year":1,"year":2}"#, as: YediCommon.LocalDate.self)
        XCTAssertEqual(error.problem, .duplicateKey("year"))
        XCTAssertEqual(
            error.description, #"JSON syntax error at line 1, column 11 (byte offset 10): duplicate key "year""#)
        // Keys are compared exactly: canonically equivalent but different spellings are different keys.
        XCTAssertEqual(
            try failure(#"{"\u00e9":1,"e\u0301":2}"#, as: YediCommon.LocalDate.self).problem,
            .unknownField(messageType: "yedi.common.LocalDate", suggestion: nil))
    }

    func testDepthLimit() throws {
        func nested(_ depth: Int) -> String {
            String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        }
        // 100 levels are JSON we accept (an array is still not a LocalDate).
        XCTAssertEqual(
            try failure(nested(100), as: YediCommon.LocalDate.self).description,
            "expected an object (yedi.common.LocalDate), got an array (line 1, column 1)")
        for depth in [101, 100_000] {
            XCTAssertEqual(
                try failure(nested(depth), as: YediCommon.LocalDate.self).description,
                "JSON syntax error at line 1, column 101 (byte offset 100): "
                    + "arrays and objects nested deeper than 100 levels are not accepted")
        }
        let deepObject =
            #"{"user":"# + String(repeating: #"{"a":"#, count: 100) + "1" + String(repeating: "}", count: 101)
        XCTAssertTrue(try failure(deepObject, as: YediAccount.Designer.self).isSyntaxError)
    }

    func testLoneSurrogates() throws {
        let cases = [
            (#"{"text":"\uD83D"}"#, #"lone high surrogate \uD83D (no low surrogate follows)"#),
            (#"{"text":"\uD83Dx"}"#, #"lone high surrogate \uD83D (no low surrogate follows)"#),
            (#"{"text":"\ud83d\u0041"}"#, #"lone high surrogate \uD83D (no low surrogate follows)"#),
            (#"{"text":"\uDE4C"}"#, #"lone low surrogate \uDE4C"#),
        ]
        for (json, message) in cases {
            XCTAssertEqual(
                try failure(json, as: YediEcho.EchoRequest.self).description,
                "JSON syntax error at line 1, column 10 (byte offset 9): \(message)", json)
        }
        XCTAssertEqual(try decode(#"{"text":"\ud83d\ude4c"}"#, as: YediEcho.EchoRequest.self).text, "🙌")
    }

    func testOtherMalformedText() throws {
        let cases: [(String, String)] = [
            ("", "line 1, column 1 (byte offset 0): expected a JSON value, found the end of the text"),
            ("  \n ", "line 2, column 2 (byte offset 4): expected a JSON value, found the end of the text"),
            (
                #"{"year":1} x"#,
                "line 1, column 12 (byte offset 11): expected the end of the text after the JSON value, found 'x'"
            ),
            (#"{"year":01}"#, "line 1, column 10 (byte offset 9): numbers must not have leading zeros"),
            (
                #"{"year":1.}"#,
                "line 1, column 11 (byte offset 10): expected a digit after the decimal point, found '}'"
            ),
            (#"{"year":-}"#, "line 1, column 10 (byte offset 9): expected a digit after '-', found '}'"),
            (#"{"year":1e}"#, "line 1, column 11 (byte offset 10): expected a digit in the exponent, found '}'"),
            (#"{"year":NaN}"#, "line 1, column 9 (byte offset 8): expected a JSON value, found 'NaN'"),
            (#"{"year":+1}"#, "line 1, column 9 (byte offset 8): expected a JSON value, found '+'"),
            (#"{"year":tru}"#, "line 1, column 9 (byte offset 8): expected a JSON value, found 'tru'"),
            (
                "{'year':1}",
                "line 1, column 2 (byte offset 1): expected a string key in double quotes, found a single quote (JSON strings use double quotes)"
            ),
            ("{year:1}", "line 1, column 2 (byte offset 1): expected a string key in double quotes, found 'year'"),
            (
                "{\"year\":1 // born\n}",
                "line 1, column 11 (byte offset 10): expected ',' or '}' after an object member, found a comment (JSON has none)"
            ),
            (
                #"{"year":1 "month":2}"#,
                #"line 1, column 11 (byte offset 10): expected ',' or '}' after an object member, found '"'"#
            ),
            (#"{"text":"abc"#, "line 1, column 9 (byte offset 8): the string that starts here has no closing quote"),
            (
                "{\"text\":\"a\tb\"}",
                "line 1, column 11 (byte offset 10): control character U+0009 must be escaped in a string"
            ),
            (
                #"{"text":"a\xb"}"#,
                #"line 1, column 11 (byte offset 10): invalid escape sequence: '\' followed by 'xb'"#
            ),
            (
                #"{"text":"\u12G4"}"#,
                #"line 1, column 14 (byte offset 13): \u must be followed by four hex digits, found 'G4'"#
            ),
            (
                "{\"text\":\"\u{00A0}\"}\u{00A0}",
                "line 1, column 13 (byte offset 13): expected the end of the text after the JSON value, found '\u{00A0}' (U+00A0)"
            ),
        ]
        for (json, message) in cases {
            XCTAssertEqual(
                try failure(json, as: YediEcho.EchoRequest.self).description, "JSON syntax error at \(message)", json)
        }
    }

    func testInvalidUTF8() throws {
        for (bytes, message) in [
            ([0x22, 0xFF, 0x22], "line 1, column 2 (byte offset 1): invalid UTF-8 byte 0xFF"),
            ([0x22, 0xC0, 0xAF, 0x22], "line 1, column 2 (byte offset 1): invalid UTF-8 byte 0xC0"),  // overlong '/'
            ([0x22, 0xED, 0xA0, 0x80, 0x22], "line 1, column 2 (byte offset 1): invalid UTF-8 byte 0xED"),  // surrogate
            ([0x22, 0xEA, 0xB0, 0x22], "line 1, column 2 (byte offset 1): invalid UTF-8 byte 0xEA"),  // truncated
            (
                [0xFE],
                "line 1, column 1 (byte offset 0): expected a JSON value, found the byte 0xFE, which is not UTF-8"
            ),
        ] as [([UInt8], String)] {
            XCTAssertThrowsError(try ProtoJSONDecoder().decode(utf8: bytes, as: YediEcho.EchoRequest.schema)) { error in
                XCTAssertEqual((error as? ProtoJSONError)?.description, "JSON syntax error at \(message)")
            }
        }
    }

    // MARK: Schema

    func testUnknownFieldNamesThePathAndSuggestsTheClosestName() throws {
        let error = try failure(#"{"designer":{"shop":{"nmae":"x"}}}"#, as: YediAccount.SignUpRequest.self)
        XCTAssertEqual(error.problem, .unknownField(messageType: "yedi.account.Shop", suggestion: "name"))
        XCTAssertEqual(error.path, "designer.shop.nmae")
        XCTAssertEqual(
            error.description,
            #"designer.shop.nmae: unknown field of yedi.account.Shop; did you mean "name"? (line 1, column 22)"#)

        XCTAssertEqual(
            try failure(#"{"name":"김예디","emial":1}"#, as: YediAccount.User.self).description,
            #"emial: unknown field of yedi.account.User; did you mean "email"? (line 1, column 15)"#)
        XCTAssertEqual(
            try failure(#"{"birth_dat":{}}"#, as: YediAccount.User.self).description,
            #"birth_dat: unknown field of yedi.account.User; did you mean "birth_date"? (line 1, column 2)"#)
        XCTAssertEqual(
            try failure(#"{"CreatedAtMS":1}"#, as: YediAccount.User.self).description,
            #"CreatedAtMS: unknown field of yedi.account.User; did you mean "createdAtMs"? (line 1, column 2)"#)
        XCTAssertEqual(
            try failure(#"{"posts":[{},{"photos":[{"widht":1}]}]}"#, as: YediContent.FeedPage.self).description,
            #"posts[1].photos[0].widht: unknown field of yedi.common.ImageRef; did you mean "width"? (line 1, column 26)"#
        )
        XCTAssertEqual(
            try failure(#"{"zzzzzz":1}"#, as: YediAccount.User.self).description,
            "zzzzzz: unknown field of yedi.account.User (line 1, column 2)")
    }

    func testWrongTypeNamesThePathAndTheExpectedType() throws {
        let cases: [(String, any ProtoMessage.Type, String)] = [
            (
                #"{"birthDate":{"year":"x"}}"#, YediAccount.SignUpRequest.self,
                #"birthDate.year: expected an int32, got a string "x" (line 1, column 22)"#
            ),
            (#"{"email":5}"#, YediAccount.User.self, "email: expected a string, got the number 5 (line 1, column 10)"),
            (
                #"{"role":true}"#, YediAccount.User.self,
                "role: expected a yedi.account.Role name or number, got true (line 1, column 9)"
            ),
            (
                #"{"role":"ROLE_ADMIN"}"#, YediAccount.User.self,
                #"role: expected a yedi.account.Role value, got a string "ROLE_ADMIN" (line 1, column 9)"#
            ),
            (
                #"{"role":"2"}"#, YediAccount.User.self,
                #"role: expected a yedi.account.Role value, got a string "2" (line 1, column 9)"#
            ),
            (
                #"{"birthDate":5}"#, YediAccount.User.self,
                "birthDate: expected an object (yedi.common.LocalDate), got the number 5 (line 1, column 14)"
            ),
            (
                #"{"skills":"가위"}"#, YediAccount.Designer.self,
                #"skills: expected an array (repeated string), got a string "가위" (line 1, column 11)"#
            ),
            (
                #"{"freeStartAtMs":[1,null]}"#, YediBooking.DaySlots.self,
                "freeStartAtMs[1]: expected an int64, got null (line 1, column 21)"
            ),
            (
                #"{"following":"true"}"#, YediAccount.FollowResponse.self,
                #"following: expected true or false, got a string "true" (line 1, column 14)"#
            ),
            (
                #"{"following":1}"#, YediAccount.FollowResponse.self,
                "following: expected true or false, got the number 1 (line 1, column 14)"
            ),
            (
                #"{"sequence":"0x10"}"#, YediEcho.EchoResponse.self,
                #"sequence: expected an int64, got a string "0x10" (line 1, column 13)"#
            ),
            (
                #"{"sequence":" 1"}"#, YediEcho.EchoResponse.self,
                #"sequence: expected an int64, got a string " 1" (line 1, column 13)"#
            ),
            (
                #"{"rating":"fast"}"#, YediAccount.ReviewSummary.self,
                #"rating: expected a double, got a string "fast" (line 1, column 11)"#
            ),
            (
                #"{"rating":"nan"}"#, YediAccount.ReviewSummary.self,
                #"rating: expected a double, got a string "nan" (line 1, column 11)"#
            ),
            (
                #"{"payload":[1,2]}"#, YediEcho.EchoRequest.self,
                "payload: expected a base64 string, got an array (line 1, column 12)"
            ),
            (
                #"{"payload":"ab$c"}"#, YediEcho.EchoRequest.self,
                "payload: expected base64 bytes: '$' at index 2 is not a base64 character (line 1, column 12)"
            ),
            (
                #"{"payload":"A"}"#, YediEcho.EchoRequest.self,
                "payload: expected base64 bytes: 1 base64 characters cannot encode whole bytes (line 1, column 12)"
            ),
            (
                #"{"payload":"+-AA"}"#, YediEcho.EchoRequest.self,
                "payload: expected base64 bytes: it mixes the standard (+/) and the URL-safe (-_) alphabets (line 1, column 12)"
            ),
            (
                #"{"payload":"AA="}"#, YediEcho.EchoRequest.self,
                "payload: expected base64 bytes: padded base64 must have a length that is a multiple of 4 (line 1, column 12)"
            ),
            (
                #"{"text":"a\u0000b"}"#, YediEcho.EchoRequest.self,
                "text: strings must not contain U+0000 (protobuf-c cannot carry it) (line 1, column 9)"
            ),
            ("[]", YediAccount.User.self, "expected an object (yedi.account.User), got an array (line 1, column 1)"),
            ("null", YediAccount.User.self, "expected an object (yedi.account.User), got null (line 1, column 1)"),
        ]
        for (json, type, message) in cases {
            let error = try failure(json, as: type)
            XCTAssertFalse(error.isSyntaxError)
            XCTAssertEqual(error.description, message, json)
        }
        XCTAssertEqual(
            try failure(#"{"birthDate":{"year":"x"}}"#, as: YediAccount.SignUpRequest.self).problem,
            .wrongType(expected: "an int32", found: #"a string "x""#))
    }

    func testOutOfRangeIntegers() throws {
        let cases: [(String, any ProtoMessage.Type, String)] = [
            (#"{"year":2147483648}"#, YediCommon.LocalDate.self, "year: expected an int32, got the number 2147483648"),
            (
                #"{"year":"-2147483649"}"#, YediCommon.LocalDate.self,
                #"year: expected an int32, got a string "-2147483649""#
            ),
            (#"{"code":-1}"#, YediRPC.Status.self, "code: expected a uint32, got the number -1"),
            (#"{"code":4294967296}"#, YediRPC.Status.self, "code: expected a uint32, got the number 4294967296"),
            (
                #"{"sequence":"9223372036854775808"}"#, YediEcho.EchoResponse.self,
                #"sequence: expected an int64, got a string "9223372036854775808""#
            ),
            (
                #"{"sequence":-9223372036854775809}"#, YediEcho.EchoResponse.self,
                "sequence: expected an int64, got the number -9223372036854775809"
            ),
            (#"{"sequence":1e19}"#, YediEcho.EchoResponse.self, "sequence: expected an int64, got the number 1e19"),
            (
                #"{"callId":"18446744073709551616"}"#, YediRPC.Frame.self,
                #"callId: expected a uint64, got a string "18446744073709551616""#
            ),
            (
                #"{"callId":1e99999999999999999999}"#, YediRPC.Frame.self,
                "callId: expected a uint64, got the number 1e99999999999999999999"
            ),
            (
                #"{"role":2147483648}"#, YediAccount.User.self,
                "role: expected a yedi.account.Role name or number, got the number 2147483648"
            ),
            (#"{"rating":1e400}"#, YediAccount.ReviewSummary.self, "rating: expected a double, got the number 1e400"),
        ]
        for (json, type, message) in cases {
            let error = try failure(json, as: type)
            XCTAssertEqual(
                error.description, message + ", which is out of range (line 1, column \(column(of: json)))", json)
            guard case .outOfRange = error.problem else { return XCTFail("\(json): \(error.problem)") }
        }
    }

    func testFractionalIntegers() throws {
        let cases: [(String, any ProtoMessage.Type, String)] = [
            (#"{"year":1.5}"#, YediCommon.LocalDate.self, "year: expected an int32, got the number 1.5"),
            (#"{"year":"2025.5"}"#, YediCommon.LocalDate.self, #"year: expected an int32, got a string "2025.5""#),
            (#"{"sequence":1e-1}"#, YediEcho.EchoResponse.self, "sequence: expected an int64, got the number 1e-1"),
            (#"{"callId":"0.000001"}"#, YediRPC.Frame.self, #"callId: expected a uint64, got a string "0.000001""#),
            (
                #"{"role":1.5}"#, YediAccount.User.self,
                "role: expected a yedi.account.Role name or number, got the number 1.5"
            ),
        ]
        for (json, type, message) in cases {
            let error = try failure(json, as: type)
            XCTAssertEqual(
                error.description, message + ", which is not an integer (line 1, column \(column(of: json)))", json)
            guard case .notAnInteger = error.problem else { return XCTFail("\(json): \(error.problem)") }
        }
    }

    func testTwoMembersOfOneOneof() throws {
        let error = try failure(#"{"text":{"text":"hi"},"image":{}}"#, as: YediChat.ChatMessage.self)
        XCTAssertEqual(error.problem, .oneofConflict(firstKey: "text"))
        XCTAssertEqual(
            error.description,
            #"image: another member of the same oneof is already set ("text") (line 1, column 23)"#)
        XCTAssertEqual(
            try failure(#"{"event":1,"messageAdded":{},"read_cursor_moved":{}}"#, as: YediChat.StreamEvent.self)
                .description,
            #"event: unknown field of yedi.chat.StreamEvent (line 1, column 2)"#)
        XCTAssertEqual(
            try failure(
                #"{"messageAdded":{"message":{"reservation":{},"postShare":{}}}}"#, as: YediChat.StreamEvent.self
            )
            .description,
            #"messageAdded.message.postShare: another member of the same oneof is already set ("messageAdded.message.reservation") (line 1, column 46)"#
        )
    }

    func testSameFieldUnderBothNames() throws {
        XCTAssertEqual(
            try failure(#"{"birthDate":null,"birth_date":{}}"#, as: YediAccount.User.self).description,
            #"birth_date: the field is already set (as "birthDate") (line 1, column 19)"#)
    }

    // MARK: Encoding

    /// `DynamicMessage` takes any value for any number; the encoder refuses what the schema does not allow.
    func testEncodingAMessageThatDoesNotFitItsSchema() throws {
        var date = DynamicMessage(schema: YediCommon.LocalDate.schema)
        date.set(.string("1990"), forField: 1)
        var stray = DynamicMessage(schema: YediCommon.LocalDate.schema)
        stray.set(.int32(1), forField: 99)
        var designer = DynamicMessage(schema: YediAccount.Designer.schema)
        designer.set(.message(DynamicMessage(schema: YediCommon.LocalDate.schema)), forField: 1)
        var skills = DynamicMessage(schema: YediAccount.Designer.schema)
        skills.set(.string("x"), forField: 3)
        let cases: [(DynamicMessage, String)] = [
            (date, "year: the message does not match its schema: a string value does not fit the field int32 year = 1"),
            (stray, "the message does not match its schema: yedi.common.LocalDate has no field number 99"),
            (
                designer,
                "user: the message does not match its schema: "
                    + "a yedi.common.LocalDate where the schema has a yedi.account.PublicUser user = 1"
            ),
            (skills, "skills: the message does not match its schema: a repeated field holds a single value"),
        ]
        for (message, expected) in cases {
            XCTAssertThrowsError(try ProtoJSONEncoder().encode(message)) { error in
                XCTAssertEqual((error as? ProtoJSONError)?.description, expected)
            }
        }
    }

    // MARK: Helpers

    private struct DecodedWithoutError: Error {}

    private func failure(_ json: String, as type: any ProtoMessage.Type, line: UInt = #line) throws -> ProtoJSONError {
        let result = Result { () throws(ProtoJSONError) in try ProtoJSONDecoder().decode(json, as: type.schema) }
        switch result {
        case .success(let message):
            XCTFail("decoded \(json) as \(message)", line: line)
            throw DecodedWithoutError()
        case .failure(let error):
            return error
        }
    }

    /// The column of the value of the last key in a one-line object: where the tested value starts.
    private func column(of json: String) -> Int {
        let scalars = Array(json.unicodeScalars)
        let colon = scalars.lastIndex(of: ":")!
        return colon + 2
    }
}
