import RPCCore
import ServiceRuntime
import YediProto

/// Housetainer's community field rules (docs/housetainer.md), each refusing with `INVALID_ARGUMENT`
/// naming the field.
enum CommunityFields {
    static let maxTitleCharacters = 100
    static let maxDetailCharacters = 5_000
    static let maxCommentCharacters = 1_000
    static let maxImages = 10

    static func scheduleType(_ value: YediHousetainer.ScheduleType) throws(RPCError) -> Int {
        Int(
            try FieldRule.choice(
                value, field: "schedule_type", allowed: [.host, .attendant], names: "host or attendant"
            )
            .rawValue)
    }

    /// The editable fields but the images (`CommunityHandlers.eventImages` checks those).
    static func event(_ fields: YediHousetainer.EventFields) throws(RPCError) -> EventFieldsRecord {
        guard fields.atMs > 0 else { throw FieldRule.invalid("at_ms", "required") }
        return EventFieldsRecord(
            title: try FieldRule.text(fields.title, field: "title", maxCharacters: maxTitleCharacters, required: true),
            scheduleType: try scheduleType(fields.scheduleType), atMilliseconds: fields.atMs,
            detail: try FieldRule.text(
                fields.detail, field: "detail", maxCharacters: maxDetailCharacters, required: true),
            link: fields.link.trimmingCharacters(in: .whitespaces).isEmpty
                ? "" : try FieldRule.webURL(fields.link, field: "link"),
            imageIDs: fields.imageIDs)
    }

    static func comment(_ value: String) throws(RPCError) -> String {
        try FieldRule.text(value, field: "content", maxCharacters: maxCommentCharacters, required: true)
    }

    static func target(_ target: YediHousetainer.CommentTarget?) throws(RPCError) -> CommentTarget {
        switch target?.target {
        case .eventID(let id)?: .event(try FieldRule.id(id, field: "target.event_id"))
        case .houseID(let id)?: .house(try FieldRule.id(id, field: "target.house_id"))
        case nil: throw FieldRule.invalid("target", "an event_id or a house_id")
        }
    }

    /// The field a target's refusals name.
    static func field(_ target: CommentTarget) -> String {
        switch target {
        case .event: "target.event_id"
        case .house: "target.house_id"
        }
    }

    static let maxHouseImages = 20
    static let maxNameCharacters = 100
    static let maxHouseContentCharacters = 10_000
    static let maxLocationCharacters = 200

    /// An admin's house fields but the images' ownership (`CommunityHandlers.ownImages` checks it).
    static func house(_ fields: YediHousetainer.HouseFields) throws(RPCError) -> HouseFieldsRecord {
        guard (1...maxHouseImages).contains(fields.imageIDs.count) else {
            throw FieldRule.invalid("image_ids", "1 to \(maxHouseImages) images")
        }
        guard (0..<fields.imageIDs.count).contains(Int(fields.coverIndex)) else {
            throw FieldRule.invalid("cover_index", "one of the images (0 to \(fields.imageIDs.count - 1))")
        }
        return HouseFieldsRecord(
            ownerID: try FieldRule.id(fields.ownerID, field: "owner_id"),
            name: try FieldRule.name(fields.name, field: "name", maxCharacters: maxNameCharacters),
            title: try FieldRule.text(fields.title, field: "title", maxCharacters: maxTitleCharacters, required: true),
            content: try FieldRule.text(
                fields.content, field: "content", maxCharacters: maxHouseContentCharacters, required: true),
            category: Int(
                try FieldRule.choice(
                    fields.category, field: "category", allowed: [.artist, .creator, .spaceDesigner, .collector],
                    names: "artist, creator, space designer or collector"
                ).rawValue),
            imageIDs: fields.imageIDs, coverIndex: Int(fields.coverIndex), domestic: fields.domestic,
            location: try FieldRule.text(
                fields.location, field: "location", maxCharacters: maxLocationCharacters, required: false),
            detailedLocation: try FieldRule.text(
                fields.detailedLocation, field: "detailed_location", maxCharacters: maxLocationCharacters,
                required: false))
    }

    /// Picked ids: at most `maximum`, none twice.
    static func picks(_ ids: [String], field: String, maximum: Int) throws(RPCError) -> [String] {
        guard ids.count <= maximum else { throw FieldRule.invalid(field, "at most \(maximum)") }
        guard Set(ids).count == ids.count else { throw FieldRule.invalid(field, "an id is listed twice") }
        return try ids.map { id throws(RPCError) in try FieldRule.id(id, field: field) }
    }

    /// A notification id as the list gave it.
    static func notificationID(_ value: String, field: String) throws(RPCError) -> Int64 {
        guard let id = Int64(value), id > 0 else { throw FieldRule.invalid(field, "not a notification id") }
        return id
    }
}
