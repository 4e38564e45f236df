import RPCCore
import ServiceRuntime
import XCTest

/// The shared field rules: each accepts what the product means and refuses the rest with
/// `INVALID_ARGUMENT` naming the field.
final class FieldRuleTests: XCTestCase {
    private func refusal(_ check: () throws -> Any) -> String? {
        do {
            _ = try check()
            return nil
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .invalidArgument)
            return error.message
        } catch {
            return "\(error)"
        }
    }

    func testFieldRuleNamesAreTrimmedCountedInCharactersAndFreeOfControlCharacters() throws {
        XCTAssertEqual(try FieldRule.name("  김민지 \n", field: "name"), "김민지")
        XCTAssertEqual(refusal { try FieldRule.name("   ", field: "name") }, "name: required")
        XCTAssertNotNil(try? FieldRule.name(String(repeating: "가", count: 50), field: "name"))
        XCTAssertEqual(
            refusal { try FieldRule.name(String(repeating: "가", count: 51), field: "name") },
            "name: at most 50 characters (got 51)")
        // One user-perceived character of many scalars counts once; a control character is refused.
        XCTAssertNotNil(try? FieldRule.name("👩‍👩‍👧‍👦", field: "name", maxCharacters: 1))
        XCTAssertEqual(
            refusal { try FieldRule.name("a\u{0007}b", field: "shop.name") },
            "shop.name: control characters are not allowed")
    }

    func testFieldRuleEmailsAreLowercasedAndShapedLikeAnAddress() throws {
        XCTAssertEqual(try FieldRule.email(" Minji@Example.COM "), "minji@example.com")
        for bad in [
            "minji", "minji@", "@example.com", "minji@example", "minji@.example.com", "mi nji@example.com",
            "a@b@example.com", String(repeating: "a", count: 65) + "@example.com",
        ] {
            XCTAssertEqual(refusal { try FieldRule.email(bad) }, "email: not an email address", bad)
        }
    }

    func testFieldRulePhoneNumbersAreKoreanAndKeptAsDigits() throws {
        XCTAssertEqual(try FieldRule.mobilePhone("010-1234-5678"), "01012345678")
        XCTAssertEqual(try FieldRule.mobilePhone("011 234 5678"), "0112345678")
        for bad in ["02-555-1234", "0101234567890", "010-1234-567a", "０１０１２３４５６７８", "01512345678"] {
            XCTAssertNotNil(refusal { try FieldRule.mobilePhone(bad) }, bad)
        }
        // Identity: a verified number is kept in E.164 (docs/platform.md, "Verified identities").
        XCTAssertEqual(try FieldRule.mobilePhoneE164("010-1234-5678"), "+821012345678")
        XCTAssertEqual(try FieldRule.mobilePhoneE164("0169871234"), "+82169871234")
        XCTAssertNotNil(refusal { try FieldRule.mobilePhoneE164("+821012345678") }, "E.164 input is not a local number")
        XCTAssertEqual(try FieldRule.phone("02-555-1234", field: "shop.phone"), "025551234")
        XCTAssertEqual(
            refusal { try FieldRule.phone("555-1234", field: "shop.phone") }, "shop.phone: not a Korean phone number")
    }

    func testFieldRuleImageIDsIdsChoicesAndBatches() throws {
        XCTAssertEqual(try FieldRule.imageID("", field: "profile_image_id"), "")
        XCTAssertEqual(try FieldRule.imageID("img_01J-x", field: "profile_image_id"), "img_01J-x")
        XCTAssertEqual(
            refusal { try FieldRule.imageID("https://evil.example/x.png", field: "profile_image_id") },
            "profile_image_id: not an image id")
        XCTAssertEqual(refusal { try FieldRule.id("", field: "post_id") }, "post_id: required")
        XCTAssertEqual(
            refusal { try FieldRule.id(String(repeating: "x", count: 129), field: "post_id") },
            "post_id: at most 128 bytes")

        enum Colour: Int { case unspecified, red, green }
        XCTAssertEqual(
            try FieldRule.choice(Colour.red, field: "colour", allowed: [.red, .green], names: "red or green"), .red)
        XCTAssertEqual(
            refusal {
                try FieldRule.choice(
                    Colour.unspecified, field: "colour", allowed: [.red, .green], names: "red or green")
            },
            "colour: choose red or green")

        XCTAssertEqual(try FieldRule.batch(["a", "b", "a", "c"], field: "user_ids"), ["a", "b", "c"])
        XCTAssertEqual(
            refusal { try FieldRule.batch(Array(repeating: "a", count: 101), field: "user_ids") },
            "user_ids: at most 100 ids")
    }
}
