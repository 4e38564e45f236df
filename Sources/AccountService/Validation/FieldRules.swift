import Foundation
import RPCCore
import ServiceRuntime
import YediProto

/// The rules for each field a user sends, each failing with `INVALID_ARGUMENT` naming the field.
/// AccountService's own rules (passwords, birth dates, shops, skills); the shared kinds (names, emails,
/// phone numbers, image ids) are ServiceRuntime's `FieldRule`.
enum FieldRules {
    static func invalid(_ field: String, _ problem: String) -> RPCError { FieldRule.invalid(field, problem) }

    /// At least 8 characters with a letter and a digit; at most 128 (the KDF's input stays small).
    static func password(_ value: String, field: String = "password") throws(RPCError) {
        guard value.count >= 8 else { throw invalid(field, "at least 8 characters") }
        guard value.count <= 128 else { throw invalid(field, "at most 128 characters") }
        guard value.contains(where: \.isLetter), value.contains(where: \.isNumber) else {
            throw invalid(field, "needs a letter and a digit")
        }
    }

    static func gender(_ value: YediAccount.Gender, field: String = "gender") throws(RPCError) -> Int {
        Int(try FieldRule.choice(value, field: field, allowed: [.female, .male], names: "female or male").rawValue)
    }

    /// A real calendar day between 1900-01-01 and `today`.
    static func birthDate(_ value: YediCommon.LocalDate?, today: Date, field: String = "birth_date") throws(RPCError)
        -> DateParts
    {
        guard let value else { throw invalid(field, "required") }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Asia/Seoul")!
        let components = DateComponents(year: Int(value.year), month: Int(value.month), day: Int(value.day))
        guard value.year >= 1900, (1...12).contains(value.month), (1...31).contains(value.day),
            let date = calendar.date(from: components),
            calendar.component(.day, from: date) == Int(value.day)
        else { throw invalid(field, "not a calendar day") }
        guard date <= today else { throw invalid(field, "is in the future") }
        return DateParts(year: Int(value.year), month: Int(value.month), day: Int(value.day))
    }

    static func rank(_ value: YediAccount.DesignerRank, field: String) throws(RPCError) -> Int {
        let ranks: [YediAccount.DesignerRank] = [.owner, .principal, .designer, .intern]
        return Int(
            try FieldRule.choice(value, field: field, allowed: ranks, names: "owner, principal, designer or intern")
                .rawValue)
    }

    static func text(_ value: String, field: String, maximum: Int) throws(RPCError) -> String {
        try FieldRule.text(value, field: field, maxCharacters: maximum, required: false)
    }

    static func skills(_ values: [String], field: String) throws(RPCError) -> [String] {
        guard values.count <= 20 else { throw invalid(field, "at most 20 skills") }
        var skills: [String] = []
        for (index, value) in values.enumerated() {
            let skill = try FieldRule.name(value, field: "\(field)[\(index)]", maxCharacters: 30)
            if !skills.contains(skill) { skills.append(skill) }
        }
        return skills
    }

    static func shop(_ value: YediAccount.Shop?, field: String = "shop") throws(RPCError) -> ShopRecord {
        guard let shop = value else { throw invalid(field, "required") }
        guard let address = shop.address else { throw invalid("\(field).address", "required") }
        var opening = Int(shop.openingHour)
        var closing = Int(shop.closingHour)
        if opening == 0 && closing == 0 {
            opening = 9
            closing = 21
        }
        guard (0...23).contains(opening) else { throw invalid("\(field).opening_hour", "a whole hour from 0 to 23") }
        guard (1...24).contains(closing), closing > opening else {
            throw invalid("\(field).closing_hour", "a whole hour after the opening hour, at most 24")
        }
        guard shop.latitude.isFinite, (-90...90).contains(shop.latitude) else {
            throw invalid("\(field).latitude", "from -90 to 90")
        }
        guard shop.longitude.isFinite, (-180...180).contains(shop.longitude) else {
            throw invalid("\(field).longitude", "from -180 to 180")
        }
        let timeZone = shop.timeZone.isEmpty ? "Asia/Seoul" : shop.timeZone
        guard TimeZone(identifier: timeZone) != nil, timeZone.contains("/") || timeZone == "UTC" else {
            throw invalid("\(field).time_zone", "not an IANA time zone")
        }
        guard shop.messengerLinks.count <= 10 else { throw invalid("\(field).messenger_links", "at most 10") }
        var links: [MessengerLinkRecord] = []
        for (index, link) in shop.messengerLinks.enumerated() {
            let kind = try FieldRule.name(
                link.kind, field: "\(field).messenger_links[\(index)].kind", maxCharacters: 30)
            guard let url = URL(string: link.url), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                url.host != nil, link.url.count <= 500
            else { throw invalid("\(field).messenger_links[\(index)].url", "not an http(s) URL") }
            links.append(MessengerLinkRecord(kind: kind, url: link.url))
        }
        return ShopRecord(
            name: try FieldRule.name(shop.name, field: "\(field).name"),
            phone: try FieldRule.phone(shop.phone, field: "\(field).phone"),
            city: try FieldRule.name(address.city, field: "\(field).address.city"),
            district: try FieldRule.name(address.district, field: "\(field).address.district", maxCharacters: 100),
            detail: try text(address.detail, field: "\(field).address.detail", maximum: 200),
            latitude: shop.latitude, longitude: shop.longitude,
            openingHour: opening, closingHour: closing, messengerLinks: links, timeZone: timeZone)
    }
}
