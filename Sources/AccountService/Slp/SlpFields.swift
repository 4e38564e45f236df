import Foundation
import RPCCore
import ServiceRuntime
import YediProto

/// SLP's field rules (docs/slp.md), each refusing with `INVALID_ARGUMENT` naming the field.
enum SlpFields {
    /// A position on the earth (finite, latitude within ±90, longitude within ±180).
    static func point(latitude: Double, longitude: Double) throws(RPCError) -> GeoPoint {
        guard latitude.isFinite, (-90...90).contains(latitude) else {
            throw FieldRule.invalid("latitude", "a finite number from -90 to 90")
        }
        guard let point = GeoPoint(latitude: latitude, longitude: longitude) else {
            throw FieldRule.invalid("longitude", "a finite number from -180 to 180")
        }
        return point
    }

    /// 0–8 study tags, each 1–8 characters without spaces, no two equal ignoring case (order kept).
    static func studies(_ values: [String], field: String = "studies") throws(RPCError) -> [String] {
        guard values.count <= SlpRules.maxStudies else {
            throw FieldRule.invalid(field, "at most \(SlpRules.maxStudies) studies")
        }
        var seen = Set<String>()
        for value in values {
            guard (1...SlpRules.maxStudyCharacters).contains(value.count) else {
                throw FieldRule.invalid(field, "each study is 1 to \(SlpRules.maxStudyCharacters) characters")
            }
            guard !value.contains(where: { $0.isWhitespace || $0.isNewline }) else {
                throw FieldRule.invalid(field, "a study has no spaces")
            }
            guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw FieldRule.invalid(field, "control characters are not allowed")
            }
            guard seen.insert(value.lowercased()).inserted else {
                throw FieldRule.invalid(field, "\"\(value)\" is there twice")
            }
        }
        return values
    }

    /// The other member of a call: an id that is not the caller's.
    static func other(_ value: String, me: String, field: String = "other_id") throws(RPCError) -> String {
        let other = try FieldRule.id(value, field: field)
        guard other != me else { throw FieldRule.invalid(field, "not yourself") }
        return other
    }

    /// 17 ≤ min ≤ max ≤ 100.
    static func ageRange(min: Int32, max: Int32) throws(RPCError) -> (Int, Int) {
        guard (SlpRules.minimumAge...SlpRules.maximumAge).contains(Int(min)) else {
            throw FieldRule.invalid("partner_min_age", "from \(SlpRules.minimumAge) to \(SlpRules.maximumAge)")
        }
        guard (Int(min)...SlpRules.maximumAge).contains(Int(max)) else {
            throw FieldRule.invalid("partner_max_age", "from partner_min_age to \(SlpRules.maximumAge)")
        }
        return (Int(min), Int(max))
    }

    /// A catalogue number in `range` (avatars 0–4, backgrounds 0–8).
    static func item(_ value: Int32, in range: ClosedRange<Int>, field: String) throws(RPCError) -> Int {
        guard range.contains(Int(value)) else {
            throw FieldRule.invalid(field, "from \(range.lowerBound) to \(range.upperBound)")
        }
        return Int(value)
    }

    /// Exactly nine rating flags.
    static func flags(_ values: [Bool]) throws(RPCError) -> [Bool] {
        guard values.count == SlpRules.ratingFlags else {
            throw FieldRule.invalid("flags", "exactly \(SlpRules.ratingFlags) flags (got \(values.count))")
        }
        return values
    }
}
