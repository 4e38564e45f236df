import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// `yedi.content.ContentModeration`: an app's operators hide posts and reviews and feature posts of
/// their own app; Housetainer's admins hide and show events and open houses (their display flag). The proto admits the operator role names; the handler checks the caller's app's
/// `operator_roles`, and the store touches only content of that app.
struct ContentModerationHandlers: YediContent.ContentModeration.ServiceProtocol, HandlerKitUser {
    let store: any ContentStore
    let kit: HandlerKit

    static let maxReasonCharacters = 1_000

    func moderateContent(
        _ request: YediContent.ModerateContentRequest, context: ServerContext
    ) async throws -> YediContent.ModerateContentResponse {
        let operatorUser = try context.requireOperator(of: apps)
        let kind: ContentModerationChange.Kind
        switch request.kind {
        case .post: kind = .post
        case .review: kind = .review
        case .housetainerEvent: kind = .event
        case .housetainerHouse: kind = .house
        default: throw FieldRule.invalid("kind", "post, review, Housetainer event or house")
        }
        let id = try FieldRule.id(request.id, field: "id")
        let action: ContentModerationChange.Action
        switch request.action {
        case .hide: action = .hide
        case .show: action = .show
        case .feature where kind == .post: action = .feature
        case .unfeature where kind == .post: action = .unfeature
        case .feature, .unfeature: throw FieldRule.invalid("action", "only posts are featured; hide or show")
        default: throw FieldRule.invalid("action", "hide, show, feature or unfeature")
        }
        let reason = try FieldRule.text(
            request.reason, field: "reason", maxCharacters: Self.maxReasonCharacters, required: action == .hide)
        let now = clock.nowMilliseconds
        let change = ContentModerationChange(
            kind: kind, id: id, app: operatorUser.app, action: action, atMilliseconds: now)
        let log = YediModeration.RecordOperatorActionRequest(
            app: operatorUser.app.rawValue, id: ids.next(), operatorID: operatorUser.id,
            action: "\(action.rawValue)-\(kind.rawValue)", subject: "\(kind.rawValue):\(id)", detail: reason, atMs: now)
        do {
            let changed = try await store.moderate(change, log: log)
            context.logger.info(
                "content moderated",
                metadata: ["operator": "\(context.userTag(operatorUser.id))", "action": "\(log.action)", "id": "\(id)"])
            return YediContent.ModerateContentResponse(changed: changed)
        } catch ContentStoreError.notFound {
            throw RPCError(code: .notFound, message: "id: no such \(kind.rawValue) in \(operatorUser.app)")
        }
    }
}
