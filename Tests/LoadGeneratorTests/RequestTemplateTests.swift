import XCTest

@testable import LoadGenerator

final class RequestTemplateTests: XCTestCase {
    func render(_ template: RequestTemplate, _ sequence: UInt64, seed: UInt64 = 1) -> String {
        var generator = SplitMix64(seed: seed)
        return template.render(sequence: sequence, using: &generator)
    }

    func testWithoutPlaceholdersTheRequestIsConstant() throws {
        let template = try RequestTemplate(#"{"text": "a {b} }}", "n": {"m": [1, 2]}}"#)
        XCTAssertTrue(template.isConstant)
        XCTAssertEqual(render(template, 7), #"{"text": "a {b} }}", "n": {"m": [1, 2]}}"#)
    }

    func testSequenceIsTheCallNumber() throws {
        let template = try RequestTemplate(#"{"text": "call {{seq}} of {{ seq }}", "count": "{{seq}}"}"#)
        XCTAssertFalse(template.isConstant)
        XCTAssertEqual(render(template, 0), #"{"text": "call 0 of 0", "count": "0"}"#)
        XCTAssertEqual(render(template, 41), #"{"text": "call 41 of 41", "count": "41"}"#)
    }

    func testRandomPicksOnlyListedValuesAndEachOfThem() throws {
        let template = try RequestTemplate(#"{"userId": "{{random:u-1, u-2 ,u-3}}"}"#)
        var generator = SplitMix64(seed: 42)
        var seen: Set<String> = []
        for sequence in 0..<200 {
            seen.insert(template.render(sequence: UInt64(sequence), using: &generator))
        }
        XCTAssertEqual(seen, [#"{"userId": "u-1"}"#, #"{"userId": "u-2"}"#, #"{"userId": "u-3"}"#])
    }

    func testUUIDIsVersion4AndDiffersPerCall() throws {
        let template = try RequestTemplate(#"{"id": "{{uuid}}"}"#)
        var generator = SplitMix64(seed: 7)
        let first = template.render(sequence: 0, using: &generator)
        let second = template.render(sequence: 0, using: &generator)
        XCTAssertNotEqual(first, second)
        let uuid = String(first.dropFirst(#"{"id": ""#.count).dropLast(2))
        let pattern = #/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/#
        XCTAssertNotNil(uuid.wholeMatch(of: pattern), uuid)
    }

    func testEscapedQuotesDoNotEndTheString() throws {
        let template = try RequestTemplate(#"{"text": "say \"{{seq}}\" \\", "b": "{{seq}}"}"#)
        XCTAssertEqual(render(template, 3), #"{"text": "say \"3\" \\", "b": "3"}"#)
    }

    func testSamplesUseEveryChoiceOfEveryList() throws {
        let template = try RequestTemplate(#"["{{random:a,b,c}}", "{{random:x,y}}", "{{seq}}"]"#)
        XCTAssertEqual(template.samples(), [#"["a", "x", "0"]"#, #"["b", "y", "1"]"#, #"["c", "x", "2"]"#])
        XCTAssertEqual(try RequestTemplate("{}").samples(), ["{}"])
    }

    func testMistakesAreErrorsThatSayWhatToWrite() {
        func message(_ json: String) -> String? {
            do {
                _ = try RequestTemplate(json)
                return nil
            } catch {
                return error.message
            }
        }
        XCTAssertEqual(
            message(#"{"text": "{{sequence}}"}"#),
            "unknown placeholder {{sequence}}: use {{seq}}, {{uuid}} or {{random:a,b,c}}")
        XCTAssertEqual(message(#"{"text": "{{seq"}"#)?.contains("not closed with }}"), true)
        XCTAssertEqual(message(#"{"text": "{{seq", "b": "}}"}"#)?.contains("not closed with }}"), true)
        XCTAssertEqual(message(#"{"count": {{seq}}}"#)?.contains("placeholders go inside JSON strings"), true)
        XCTAssertEqual(message(#"{"a": "{{random:}}"}"#)?.contains("non-empty"), true)
        XCTAssertEqual(message(#"{"a": "{{random:a,,b}}"}"#)?.contains("non-empty"), true)
        XCTAssertEqual(
            message(#"{"a": "{{}}"}"#), "unknown placeholder {{}}: use {{seq}}, {{uuid}} or {{random:a,b,c}}")
    }
}

/// A small deterministic generator, so random choices are the same on every run.
struct SplitMix64: RandomNumberGenerator {
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
