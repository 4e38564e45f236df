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

    static func eventTarget(_ target: YediHousetainer.CommentTarget?) throws(RPCError) -> String {
        guard case .eventID(let id)? = target?.target else { throw FieldRule.invalid("target", "an event_id") }
        return try FieldRule.id(id, field: "target.event_id")
    }

    /// A notification id as the list gave it.
    static func notificationID(_ value: String, field: String) throws(RPCError) -> Int64 {
        guard let id = Int64(value), id > 0 else { throw FieldRule.invalid(field, "not a notification id") }
        return id
    }
}
