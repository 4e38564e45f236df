import ProtoBridge
import XCTest
import YediProto

@testable import ProtoJSON

/// The canonical text, pinned: the probe's users and scripts (`jq`) depend on its exact shape.
final class ExactOutputTests: XCTestCase {
    static let designer = YediAccount.Designer(
        user: .init(id: "u-1", role: .designer, name: "김예디", profileImageID: "img-1"),
        description: "15년 경력 ✂️",
        skills: ["레이어드컷", "펌"],
        rank: .owner,
        reviews: .init(rating: 4.5, reviewCount: 120),
        followerCount: 1_700_000_000_000,
        shop: .init(
            name: "예디 헤어", address: .init(city: "서울"), latitude: 37.5665, longitude: 126.978, openingHour: 9,
            closingHour: 21, messengerLinks: [.init(kind: "kakaotalk", url: "https://open.kakao.com/o/x")],
            timeZone: "Asia/Seoul"))

    func testCompact() throws {
        XCTAssertEqual(
            try encode(Self.designer),
            #"{"user":{"id":"u-1","role":"ROLE_DESIGNER","name":"김예디","profileImageId":"img-1"},"#
                + #""description":"15년 경력 ✂️","skills":["레이어드컷","펌"],"#
                + #""rank":"DESIGNER_RANK_OWNER","reviews":{"rating":4.5,"reviewCount":"120"},"#
                + #""followerCount":"1700000000000","shop":{"name":"예디 헤어","#
                + #""address":{"city":"서울"},"latitude":37.5665,"longitude":126.978,"openingHour":9,"closingHour":21,"#
                + #""messengerLinks":[{"kind":"kakaotalk","url":"https://open.kakao.com/o/x"}],"timeZone":"Asia/Seoul"}}"#
        )
    }

    func testPretty() throws {
        let expected = """
            {
              "user": {
                "id": "u-1",
                "role": "ROLE_DESIGNER",
                "name": "김예디",
                "profileImageId": "img-1"
              },
              "description": "15년 경력 ✂️",
              "skills": [
                "레이어드컷",
                "펌"
              ],
              "rank": "DESIGNER_RANK_OWNER",
              "reviews": {
                "rating": 4.5,
                "reviewCount": "120"
              },
              "followerCount": "1700000000000",
              "shop": {
                "name": "예디 헤어",
                "address": {
                  "city": "서울"
                },
                "latitude": 37.5665,
                "longitude": 126.978,
                "openingHour": 9,
                "closingHour": 21,
                "messengerLinks": [
                  {
                    "kind": "kakaotalk",
                    "url": "https://open.kakao.com/o/x"
                  }
                ],
                "timeZone": "Asia/Seoul"
              }
            }
            """
        XCTAssertEqual(try encode(Self.designer, style: .pretty), expected)
    }

    func testPrettyEmptyContainersAndDefaults() throws {
        XCTAssertEqual(try encode(YediCommon.PageInfo(), style: .pretty), "{}")
        let expected = """
            {
              "designers": [],
              "page": null
            }
            """
        XCTAssertEqual(try encode(YediAccount.SearchDesignersResponse(), style: .pretty, emitDefaults: true), expected)
        let nested = """
            {
              "designers": [
                {}
              ],
              "page": {}
            }
            """
        XCTAssertEqual(
            try encode(YediAccount.SearchDesignersResponse(designers: [.init()], page: .init()), style: .pretty), nested
        )
    }

    func testStringEscaping() throws {
        let text = "a\"b\\c/d\ne\rf\tg\u{08}h\u{0C}i\u{01}j\u{1F}k\u{7F}l é 한 🙌"
        XCTAssertEqual(
            try encode(YediEcho.EchoRequest(payload: [], text: text)),
            #"{"text":"a\"b\\c/d\ne\rf\tg\bh\fi\u0001j\u001fk\#u{7F}l é 한 🙌"}"#)
        XCTAssertEqual(
            try decode(try encode(YediEcho.EchoRequest(payload: [], text: text)), as: YediEcho.EchoRequest.self).text,
            text)
    }

    func testFloatingPointNumbers() throws {
        let cases: [(Double, String)] = [
            (4.5, "4.5"), (5, "5"), (-0.0, "-0"), (0.1, "0.1"), (1e21, "1e+21"), (1e-7, "1e-07"),
            (.greatestFiniteMagnitude, "1.7976931348623157e+308"), (.leastNonzeroMagnitude, "5e-324"),
            (.nan, #""NaN""#), (.infinity, #""Infinity""#), (-.infinity, #""-Infinity""#),
        ]
        // Dynamic messages, not generated ones: protobuf-c would drop -0.0 on the wire as a zero.
        let schema = YediAccount.Shop.schema
        let latitude = try XCTUnwrap(schema.field(named: "latitude")).number
        for (value, literal) in cases {
            var shop = DynamicMessage(schema: schema)
            shop.set(.double(value), forField: latitude)
            let json = try ProtoJSONEncoder().encode(shop)
            XCTAssertEqual(json, #"{"latitude":\#(literal)}"#)
            guard case .double(let decoded) = try ProtoJSONDecoder().decode(json, as: schema)[latitude] else {
                return XCTFail("\(literal) did not decode as a double")
            }
            XCTAssertEqual(decoded.bitPattern, value.bitPattern, literal)
        }
        // No schema has a float field; the shared formatting is checked directly.
        XCTAssertEqual(JSONNumber.literal(Float(0.1)), "0.1")
        XCTAssertEqual(JSONNumber.literal(Float.leastNonzeroMagnitude), "1e-45")
        XCTAssertEqual(JSONNumber.literal(Float(3.25e10)), "3.25e+10")
        XCTAssertEqual(JSONNumber.literal(Float(16_777_216)), "16777216")
    }
}
