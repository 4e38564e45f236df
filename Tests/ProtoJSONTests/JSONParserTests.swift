import XCTest

@testable import ProtoJSON

/// The tokenizer and parser on their own: RFC 8259 exactly, numbers kept as written.
final class JSONParserTests: XCTestCase {
    func testAcceptsWhatRFC8259Allows() throws {
        let cases: [(String, JSONValue.Content)] = [
            ("1", .number("1")),
            (" \"a\" ", .string("a")),
            ("true", .bool(true)),
            ("null", .null),
            ("-0", .number("-0")),
            ("1E+2", .number("1E+2")),
            ("-12.5e-003", .number("-12.5e-003")),
            ("123456789012345678901234567890", .number("123456789012345678901234567890")),
            (#""\/\"\\\b\f\n\r\t\u00e9\u20AC""#, .string("/\"\\\u{8}\u{C}\n\r\té€")),
            (#""\u0000""#, .string("\u{0}")),
            (#""\uD834\uDD1E""#, .string("𝄞")),
            ("[]", .array([])),
            ("{}", .object([])),
        ]
        for (text, expected) in cases {
            XCTAssertEqual(try JSONParser.parse(Array(text.utf8)).content, expected, text)
        }
        let tree = try JSONParser.parse(Array(#"{"":[1,{"a":null}],"b":"c"}"#.utf8))
        guard case .object(let members) = tree.content else { return XCTFail("not an object") }
        XCTAssertEqual(members.map(\.key), ["", "b"])
        XCTAssertEqual(members.map(\.keyOffset), [1, 19])
        XCTAssertEqual(members[1].value.offset, 23)
    }

    func testRefusesEverythingElse() {
        let cases = [
            "[1,]", "[,1]", "{,}", "[1 2]", #"{"a" 1}"#, #"{"a":1,}"#, "[01]", "[.1]", "[1.]", "[-]", "[Infinity]",
            "[NaN]",
            "[0x1]", "['a']", #"["\a"]"#, "\"\t\"", #"["\uD800"]"#, #"["\uDC00\uD800"]"#, "[1]x", "[", #"{"a":1"#,
            "/* */ {}", "[true false]", "[nul]", "[1e]", "[1e+]", "[\u{FEFF}1]", "{1:2}", "[\"a\"\"b\"]", "[--1]",
            "[+1]",
            "\u{FEFF}", "[\"\\u12\"]",
        ]
        for text in cases {
            XCTAssertThrowsError(try JSONParser.parse(Array(text.utf8)), text) { error in
                XCTAssertEqual((error as? ProtoJSONError)?.isSyntaxError, true, text)
            }
        }
    }

    func testWriterCompactAndPretty() throws {
        let tree = try JSONParser.parse(Array(#"{"a":[1,"x\n",{"b":null,"c":[]}],"d":{},"e":true}"#.utf8))
        var compact = JSONWriter(pretty: false)
        compact.value(tree)
        XCTAssertEqual(compact.text, #"{"a":[1,"x\n",{"b":null,"c":[]}],"d":{},"e":true}"#)
        var pretty = JSONWriter(pretty: true)
        pretty.value(tree)
        XCTAssertEqual(
            pretty.text,
            """
            {
              "a": [
                1,
                "x\\n",
                {
                  "b": null,
                  "c": []
                }
              ],
              "d": {},
              "e": true
            }
            """)
    }

    func testBase64() throws {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ 13) }
            let standard = Base64.encode(bytes)
            XCTAssertEqual(standard.utf8.count % 4, 0)
            XCTAssertEqual(try Base64.decode(standard), bytes)
            let unpadded = String(standard.prefix { $0 != "=" })
            let urlSafe = String(unpadded.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
            XCTAssertEqual(try Base64.decode(unpadded), bytes)
            XCTAssertEqual(try Base64.decode(urlSafe), bytes)
        }
        for invalid in ["A", "AAAAA", "AA=A", "A===", "AA==AA==", " AA=", "AA\n", "é"] {
            XCTAssertThrowsError(try Base64.decode(invalid), invalid)
        }
    }

    func testExactIntegerReading() {
        let cases: [(String, JSONNumber.IntegerReading)] = [
            ("0", .value(0)), ("-0", .value(0)), ("18446744073709551615", .value(Int128(UInt64.max))),
            ("-18446744073709551615", .value(-Int128(UInt64.max))), ("18446744073709551616", .outOfRange),
            ("1.8446744073709551615e19", .value(Int128(UInt64.max))), ("1e20", .outOfRange), ("100e-2", .value(1)),
            ("0.000e5", .value(0)), ("1.01e1", .notAnInteger), ("5e-1", .notAnInteger),
            ("1e-999999999999", .notAnInteger),
            ("1e999999999999", .outOfRange), ("", .notANumber), ("+1", .notANumber), ("1 ", .notANumber),
            ("0x10", .notANumber), ("01", .notANumber), ("1.", .notANumber), (".5", .notANumber),
            ("Infinity", .notANumber),
        ]
        for (literal, expected) in cases {
            XCTAssertEqual(JSONNumber.integer(literal), expected, literal)
        }
    }
}
