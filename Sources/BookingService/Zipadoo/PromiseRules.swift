import Foundation
import RPCCore
import ServiceRuntime
import YediProto

/// Zipadoo's numbers and field rules (docs/zipadoo.md).
enum PromiseRules {
    static let minute: Int64 = 60_000
    /// Tracking opens 30 minutes before the promise and closes 3 hours after it.
    static let opensBefore: Int64 = 30 * minute
    static let closesAfter: Int64 = 180 * minute
    /// Arrived before T + 60 s: on time.
    static let lateAfter: Int64 = 60_000
    /// A fix within 30 m of the destination (inclusive) is an arrival.
    static let arrivalMetres = 30.0
    /// At most one fix per participant per second.
    static let fixInterval: Int64 = 1_000
    static let maxTitleCharacters = 15
    static let maxParticipants = 20
    static let fees: Set<Int32> = Set([0, 100, 200, 300, 400, 500] + stride(from: 1_000, through: 5_000, by: 500))
    /// Past promises: 10 a page, the latest 50.
    static let pastPageSize = 10
    static let pastKept = 50
    /// Upcoming and tracking lists: all of them, up to this many.
    static let openListLimit = 200

    static func window(at: Int64, now: Int64) -> YediZipadoo.PromiseWindow {
        if now < at - opensBefore { return .upcoming }
        if now < at + closesAfter { return .tracking }
        return .past
    }

    static func title(_ value: String) throws(RPCError) -> String {
        try FieldRule.text(value, field: "title", maxCharacters: maxTitleCharacters, required: true)
    }

    static func fee(_ value: Int32) throws(RPCError) -> Int {
        guard fees.contains(value) else {
            throw FieldRule.invalid("fee", "one of 0, 100, 200, 300, 400, 500, 1000, 1500 … 5000")
        }
        return Int(value)
    }

    static func place(_ value: YediZipadoo.Place?) throws(RPCError) -> PlaceRecord {
        guard let value else { throw FieldRule.invalid("place", "required") }
        let name = try FieldRule.text(value.name, field: "place.name", maxCharacters: 100, required: true)
        let address = try FieldRule.text(value.address, field: "place.address", maxCharacters: 200, required: false)
        guard value.latitude.isFinite, abs(value.latitude) <= 90 else {
            throw FieldRule.invalid("place.latitude", "between -90 and 90")
        }
        guard value.longitude.isFinite, abs(value.longitude) <= 180 else {
            throw FieldRule.invalid("place.longitude", "between -180 and 180")
        }
        return PlaceRecord(name: name, address: address, latitude: value.latitude, longitude: value.longitude)
    }

    static func point(latitude: Double, longitude: Double) throws(RPCError) -> GeoPoint {
        guard latitude.isFinite, abs(latitude) <= 90 else { throw FieldRule.invalid("latitude", "between -90 and 90") }
        guard longitude.isFinite, abs(longitude) <= 180 else {
            throw FieldRule.invalid("longitude", "between -180 and 180")
        }
        return GeoPoint(latitude: latitude, longitude: longitude)!
    }

    /// A UUID (8-4-4-4-12 hex digits), lowercased.
    static func clientID(_ value: String) throws(RPCError) -> String {
        guard let uuid = UUID(uuidString: value) else { throw FieldRule.invalid("client_id", "not a UUID") }
        return uuid.uuidString.lowercased()
    }

    /// 0–20 distinct ids, the creator not among them.
    static func participants(_ ids: [String], creator: String) throws(RPCError) -> [String] {
        guard ids.count <= maxParticipants else {
            throw FieldRule.invalid("participant_ids", "at most \(maxParticipants) besides you")
        }
        var seen = Set<String>()
        for id in ids {
            _ = try FieldRule.id(id, field: "participant_ids")
            guard id != creator else { throw FieldRule.invalid("participant_ids", "you are in it already") }
            guard seen.insert(id).inserted else { throw FieldRule.invalid("participant_ids", "\(id) is listed twice") }
        }
        return ids
    }

    /// A promise time at least 30 minutes from now.
    static func time(_ at: Int64, now: Int64) throws(RPCError) -> Int64 {
        guard at >= now + opensBefore else {
            throw RPCError(code: .failedPrecondition, message: "at_ms: at least 30 minutes from now")
        }
        return at
    }

    // MARK: Depth

    /// The depth band of `late` out of `completed`, on the kept rate k = 100 − late / completed × 100 with
    /// half-open bands (a, b], decided in whole numbers so no rate falls between two bands.
    static func depth(completed: Int64, late: Int64) -> (YediZipadoo.Depth, String) {
        guard completed > 0 else { return (.newbie, "뉴비약속러") }
        let kept = completed - late  // k ≤ b ⇔ 100 × kept ≤ b × completed
        func atMost(_ bound: Int64) -> Bool { 100 * kept <= bound * completed }
        if kept == 0 { return (.innerCore, "플랭크톤") }
        if atMost(30) { return (.outerCore, "자벌레") }
        if atMost(50) { return (.lowerMantle, "일탈쟁이") }
        if atMost(70) { return (.upperMantle, "어중간지각쟁이") }
        if atMost(80) { return (.crust, "일반인") }
        if atMost(90) { return (.surface, "약속의 수호자") }
        if atMost(95) { return (.troposphere, "친구들의 사랑") }
        return (.stratosphere, "약속의 신")
    }
}
