import Foundation
import RPCCore
import ServiceRuntime
import YediProto

/// ContentService's own rules (titles, prices, scores, review keywords); the shared kinds are
/// ServiceRuntime's `FieldRule`. Each failure is INVALID_ARGUMENT naming the field.
enum FieldRules {
    static func invalid(_ field: String, _ problem: String) -> RPCError { FieldRule.invalid(field, problem) }

    static func required(_ value: String, field: String) throws(RPCError) -> String {
        try FieldRule.id(value, field: field)
    }

    /// Trimmed text, required, at most `maximum` characters.
    static func text(_ value: String, field: String, maximum: Int) throws(RPCError) -> String {
        try FieldRule.text(value, field: field, maxCharacters: maximum, required: true)
    }

    static func title(_ value: String) throws(RPCError) -> String {
        try text(value, field: "title", maximum: 100)
    }

    static func description(_ value: String) throws(RPCError) -> String {
        try text(value, field: "description", maximum: 2_000)
    }

    static func price(_ value: Int64) throws(RPCError) -> Int64 {
        guard (0...100_000_000).contains(value) else { throw invalid("price_krw", "0 to 100,000,000 KRW") }
        return value
    }

    static func category(_ value: YediCommon.HairCategory) throws(RPCError) -> Int {
        let categories: [YediCommon.HairCategory] = [.cut, .perm, .color, .other]
        return Int(
            try FieldRule.choice(value, field: "category", allowed: categories, names: "cut, perm, colour or other")
                .rawValue)
    }

    static func score(_ value: Int32) throws(RPCError) -> Int {
        guard (1...5).contains(value) else { throw invalid("score", "1 to 5") }
        return Int(value)
    }

    /// 1 to 5 distinct keywords of the catalogue of 15.
    static func keywords(_ values: [YediContent.ReviewKeyword]) throws(RPCError) -> [Int] {
        guard !values.isEmpty else { throw invalid("keywords", "pick at least one") }
        guard values.count <= 5 else { throw invalid("keywords", "at most 5") }
        var seen = Set<Int32>()
        for value in values {
            guard (1...15).contains(value.rawValue) else {
                throw invalid("keywords", "\(value.rawValue) is not in the keyword catalogue")
            }
            guard seen.insert(value.rawValue).inserted else { throw invalid("keywords", "a keyword is picked twice") }
        }
        return values.map { Int($0.rawValue) }
    }
}
