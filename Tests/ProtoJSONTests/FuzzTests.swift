import ProtoBridge
import ProtoTestSupport
import XCTest

@testable import ProtoJSON

/// The probe parses whatever a person types or pipes in. 10,000 random and mutated inputs (seeded, so a
/// failure reproduces) must each either decode or throw `ProtoJSONError`; a crash fails the whole run.
final class FuzzTests: XCTestCase {
    func testTenThousandRandomAndMutatedInputsNeverCrash() throws {
        var random = SplitMix64(seed: 0x5945_4449_4A53_4F4E)
        let schemas = MessageSchema.all
        let seeds = try seedCorpus()
        var decoded = 0
        var refused = 0
        var syntaxErrors = 0
        for iteration in 0..<10_000 {
            let input: [UInt8]
            let schema: MessageSchema
            if iteration % 10 == 0 {
                input = (0..<Int.random(in: 0...64, using: &random)).map { _ in
                    Self.alphabet.randomElement(using: &random)!
                }
                schema = schemas.randomElement(using: &random)!
            } else {
                let seed = seeds.randomElement(using: &random)!
                // Half the mutations edit bytes (mostly syntax errors), half edit the parsed tree (mostly
                // well-formed JSON that does or does not fit the schema).
                if iteration % 2 == 0 {
                    input = mutate(seed.json, using: &random)
                } else {
                    input = mutateTree(seed.json, using: &random)
                }
                // Mostly the seed's own schema, so that mutations get past the first key.
                schema =
                    Int.random(in: 0..<4, using: &random) == 0 ? schemas.randomElement(using: &random)! : seed.schema
            }
            let context = "iteration \(iteration): \(String(decoding: input.prefix(300), as: UTF8.self))"
            switch Result(catching: { () throws(ProtoJSONError) in
                try ProtoJSONDecoder().decode(utf8: input, as: schema)
            }) {
            case .success(let message):
                decoded += 1
                // Whatever decodes is a message protobuf-c can encode, and reads back from its own JSON.
                XCTAssertNoThrow(try message.serializedBytes(), context)
                // Compared as text: a decoded "NaN" is not equal to itself as a value.
                let json = try ProtoJSONEncoder().encode(message)
                XCTAssertEqual(
                    try ProtoJSONEncoder().encode(ProtoJSONDecoder().decode(json, as: schema)), json, context)
            case .failure(let error):
                refused += 1
                if error.isSyntaxError { syntaxErrors += 1 }
                if let position = error.position {
                    XCTAssertLessThanOrEqual(position.byteOffset, input.count, context)
                    XCTAssertGreaterThanOrEqual(position.line, 1, context)
                    XCTAssertGreaterThanOrEqual(position.column, 1, context)
                }
                XCTAssertFalse(error.description.isEmpty)
            }
            // The bare parser: what parses, writes and parses again to the same tree.
            if let tree = try? JSONParser.parse(input) {
                for pretty in [false, true] {
                    var writer = JSONWriter(pretty: pretty)
                    writer.value(tree)
                    XCTAssertEqual(try JSONParser.parse(writer.output).content, tree.content, context)
                }
            }
        }
        // Every outcome is exercised, or the mutations are too timid (or too wild) to test anything.
        XCTAssertGreaterThan(decoded, 500)
        XCTAssertGreaterThan(syntaxErrors, 3000)
        XCTAssertGreaterThan(refused - syntaxErrors, 3000)
    }

    // MARK: Inputs

    /// Bytes JSON is made of, a few that it must refuse, and UTF-8 lead and continuation bytes.
    static let alphabet: [UInt8] =
        Array(#"{}[]",:\/ 0123456789-+.eEtrufalsn"#.utf8) + [
            0x00, 0x09, 0x0A, 0x7F, 0xC3, 0xA9, 0xED, 0xF0, 0x9F, 0xFF,
        ]

    static let tokens: [String] = [
        "null", "true", "false", "{", "}", "[", "]", ",", ":", "\"", "\\", "\\u", "\\uD83D", "\\uDE4C", "\\u0000",
        "1e999", "-0", "0.5", "1e-1", "18446744073709551616", "\"NaN\"", "\"Infinity\"", "\"-_A=\"",
        "\"ROLE_DESIGNER\"",
        "{\"a\":1}", "[[[[", "]]]]", "\"year\"", "\"text\"", "\"birth_date\"", "999", "\"9223372036854775808\"",
    ]

    private func seedCorpus() throws -> [(schema: MessageSchema, json: [UInt8])] {
        var seeds: [(MessageSchema, [UInt8])] = []
        for schema in MessageSchema.all {
            // Variants 0 and 2: variant 1 carries a mebibyte of bytes, too slow to mutate 10,000 times.
            let variants = SampleMessages.variants(of: schema)
            for (index, variant) in [variants[0], variants[2]].enumerated() {
                let encoder = ProtoJSONEncoder(style: index == 0 ? .compact : .pretty, emitDefaults: index == 1)
                seeds.append((schema, try encoder.encodeUTF8(variant)))
            }
            seeds.append((schema, try ProtoJSONEncoder(emitDefaults: true).encodeUTF8(DynamicMessage(schema: schema))))
        }
        return seeds
    }

    private func mutate(_ seed: [UInt8], using random: inout SplitMix64) -> [UInt8] {
        var bytes = seed
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<7, using: &random) {
            case 0 where !bytes.isEmpty:
                bytes[position] = Self.alphabet.randomElement(using: &random)!
            case 1:
                bytes.insert(contentsOf: Self.tokens.randomElement(using: &random)!.utf8, at: position)
            case 2 where !bytes.isEmpty:
                bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...16, using: &random)))
            case 3 where !bytes.isEmpty:
                let range = position..<min(bytes.count, position + Int.random(in: 1...64, using: &random))
                bytes.insert(contentsOf: bytes[range], at: Int.random(in: 0...bytes.count, using: &random))
            case 4:
                bytes.removeSubrange(position..<bytes.count)
            case 5 where !bytes.isEmpty:
                bytes[position] = UInt8.random(in: 0...255, using: &random)
            default:
                // A digit run grown into a long number, or a value swapped for another token.
                bytes.insert(
                    contentsOf: repeatElement(UInt8(ascii: "9"), count: Int.random(in: 1...40, using: &random)),
                    at: position)
            }
        }
        return bytes
    }
}

extension FuzzTests {
    /// Values that each fit some field and not others: numbers at the edges of every integer type,
    /// special floats, base64 in both alphabets, enum names, and containers where scalars belong.
    static let replacements: [String] = [
        "null", "true", "false", "0", "-1", "1.5", "1e3", "2147483648", "-9223372036854775809", "18446744073709551615",
        "1e400", #""""#, #""x""#, #""NaN""#, #""-Infinity""#, #""AAE=""#, #""-_8""#, #""ROLE_DESIGNER""#,
        #""HAIR_CATEGORY_PERM""#, #""9223372036854775807""#, #""\u0000""#, #""예디 🙌""#, "[]", "{}", #"[1,"a",null]"#,
        #"{"year":1}"#, "[{}]",
    ]

    fileprivate func mutateTree(_ seed: [UInt8], using random: inout SplitMix64) -> [UInt8] {
        guard var tree = try? JSONParser.parse(seed) else { return seed }
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            var counter = 0
            let target = Int.random(in: 0..<nodeCount(tree), using: &random)
            tree = mutateNode(tree, target: target, counter: &counter, using: &random)
        }
        var writer = JSONWriter(pretty: Bool.random(using: &random))
        writer.value(tree)
        return writer.output
    }

    private func nodeCount(_ value: JSONValue) -> Int {
        switch value.content {
        case .array(let elements): 1 + elements.reduce(0) { $0 + nodeCount($1) }
        case .object(let members): 1 + members.reduce(0) { $0 + nodeCount($1.value) }
        default: 1
        }
    }

    /// Replaces the node with pre-order index `target`; `counter` is the next index to hand out.
    private func mutateNode(_ value: JSONValue, target: Int, counter: inout Int, using random: inout SplitMix64)
        -> JSONValue
    {
        let index = counter
        counter += 1
        if index == target { return mutation(of: value, using: &random) }
        switch value.content {
        case .array(let elements):
            var mutated: [JSONValue] = []
            for element in elements {
                mutated.append(mutateNode(element, target: target, counter: &counter, using: &random))
            }
            return JSONValue(content: .array(mutated), offset: 0)
        case .object(let members):
            var mutated: [JSONValue.Member] = []
            for member in members {
                let value = mutateNode(member.value, target: target, counter: &counter, using: &random)
                mutated.append(JSONValue.Member(key: member.key, keyOffset: 0, value: value))
            }
            return JSONValue(content: .object(mutated), offset: 0)
        default:
            return value
        }
    }

    private func mutation(of value: JSONValue, using random: inout SplitMix64) -> JSONValue {
        func replacement() -> JSONValue {
            try! JSONParser.parse(Array(Self.replacements.randomElement(using: &random)!.utf8))
        }
        switch (Int.random(in: 0..<6, using: &random), value.content) {
        case (1, .object(var members)) where !members.isEmpty:
            let index = Int.random(in: 0..<members.count, using: &random)
            let member = members[index]
            switch Int.random(in: 0..<3, using: &random) {
            case 0:
                members.remove(at: index)
            case 1:
                // The proto name, or a typo: both are keys a person might write.
                var key = Array(member.key)
                if key.count > 2, Bool.random(using: &random) {
                    let at = Int.random(in: 0..<key.count - 1, using: &random)
                    key.swapAt(at, at + 1)
                } else {
                    key = Array(key.map { $0.isUppercase ? "_" + $0.lowercased() : String($0) }.joined())
                }
                members[index] = JSONValue.Member(key: String(key), keyOffset: 0, value: member.value)
            default:
                members[index] = JSONValue.Member(key: member.key, keyOffset: 0, value: replacement())
            }
            return JSONValue(content: .object(members), offset: 0)
        case (2, .array(var elements)) where !elements.isEmpty:
            let index = Int.random(in: 0..<elements.count, using: &random)
            if Bool.random(using: &random) {
                elements.remove(at: index)
            } else {
                elements.insert(elements[index], at: index)
            }
            return JSONValue(content: .array(elements), offset: 0)
        case (3, _) where Bool.random(using: &random):
            return JSONValue(content: .array([value]), offset: 0)
        default:
            return replacement()
        }
    }
}
