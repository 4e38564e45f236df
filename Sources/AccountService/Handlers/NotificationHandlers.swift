import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// `yedi.account.Notifications`: a user's push devices and notification inbox, always in the caller's
/// app (`context.app`), and `Notify` for the other services (docs/account.md, "Devices and the inbox").
/// Hosted by the AccountService process beside `AccountHandlers`, because the rows belong to its users.
struct NotificationHandlers: YediAccount.Notifications.ServiceProtocol, HandlerKitUser {
    let store: any NotificationStore
    let kit: HandlerKit

    /// The inbox, newest first.
    var inbox: PageList { kit.pageList("notifications") }

    // MARK: Devices

    func registerDevice(
        _ request: YediAccount.RegisterDeviceRequest, context: ServerContext
    ) async throws -> YediAccount.RegisterDeviceResponse {
        let user = try context.requireUser()
        let platform = try Self.platform(request.platform)
        let token = try Self.token(request.token)
        guard let family = user.sessionID, !family.isEmpty else {
            throw RPCError(code: .unauthenticated, message: "this token names no session; sign in again")
        }
        do {
            let added = try await store.registerDevice(
                DeviceRecord(
                    id: ids.next(), userID: user.id, app: context.app, platform: platform, token: token,
                    sessionFamilyID: family, registeredAtMilliseconds: clock.nowMilliseconds),
                keep: Int(quotas.devices.limit))
            return YediAccount.RegisterDeviceResponse(added: added)
        } catch NotificationStoreError.noSuchUser {
            throw RPCError(code: .unauthenticated, message: "this account no longer exists")
        }
    }

    func unregisterDevice(
        _ request: YediAccount.UnregisterDeviceRequest, context: ServerContext
    ) async throws -> YediAccount.UnregisterDeviceResponse {
        let user = try context.requireUser()
        let removed = try await store.unregisterDevice(
            userID: user.id, app: context.app, token: try Self.token(request.token))
        return YediAccount.UnregisterDeviceResponse(removed: removed)
    }

    // MARK: The inbox

    func listNotifications(
        _ request: YediAccount.ListNotificationsRequest, context: ServerContext
    ) async throws -> YediAccount.ListNotificationsResponse {
        let user = try context.requireUser()
        let page = try inbox.read(request.page, as: Int64.self)
        let rows = try await store.notifications(
            userID: user.id, app: context.app, after: page.after, limit: page.limit + 1)
        return YediAccount.ListNotificationsResponse(
            notifications: rows.prefix(page.limit).map { Self.notification($0.0) },
            page: inbox.next(rows.map(\.1), limit: page.limit),
            unreadCount: try await store.unreadCount(userID: user.id, app: context.app))
    }

    func countUnread(
        _ request: YediAccount.CountUnreadRequest, context: ServerContext
    ) async throws -> YediAccount.CountUnreadResponse {
        let user = try context.requireUser()
        return YediAccount.CountUnreadResponse(
            unreadCount: try await store.unreadCount(userID: user.id, app: context.app))
    }

    func markRead(
        _ request: YediAccount.MarkReadRequest, context: ServerContext
    ) async throws -> YediAccount.MarkReadResponse {
        let user = try context.requireUser()
        guard !request.ids.isEmpty || !request.upToID.isEmpty else {
            throw FieldRule.invalid("ids", "name the notifications to mark read, or up_to_id")
        }
        let unread = try await store.markRead(
            userID: user.id, app: context.app, ids: request.ids,
            upToID: request.upToID.isEmpty ? nil : request.upToID, now: clock.nowMilliseconds)
        return YediAccount.MarkReadResponse(unreadCount: unread)
    }

    // MARK: Other services

    /// Applied once per outbox job (`Delivery`). A user that is gone or of another app is not notified,
    /// answered OK (`applied` false) so the caller's outbox moves on instead of retrying for ever.
    func notify(_ request: YediAccount.NotifyRequest, context: ServerContext) async throws
        -> YediAccount.NotifyResponse
    {
        let userID = try FieldRule.id(request.userID, field: "user_id")
        guard let app = AppID(validating: request.app) else { throw FieldRule.invalid("app", "not an app name") }
        let content = try Self.content(request)
        let id = try await store.notify(userID: userID, app: app, content, delivery: Delivery(context))
        return YediAccount.NotifyResponse(applied: id != nil)
    }
}

// MARK: Fields and messages

extension NotificationHandlers {
    /// Provider tokens: FCM's are ~160 bytes, APNs' 64 hex digits; the proto bounds them at 1 KiB.
    static func token(_ value: String) throws(RPCError) -> String {
        guard !value.isEmpty else { throw FieldRule.invalid("token", "required") }
        guard value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw FieldRule.invalid("token", "printable ASCII without spaces")
        }
        return value
    }

    static func platform(_ value: YediAccount.PushPlatform) throws(RPCError) -> PushPlatform {
        switch value {
        case .fcm: .fcm
        case .apns: .apns
        default: throw FieldRule.invalid("platform", "PUSH_PLATFORM_FCM or PUSH_PLATFORM_APNS")
        }
    }

    /// The notification's texts, bounded by the proto in bytes and here in characters.
    static func content(_ request: YediAccount.NotifyRequest) throws(RPCError) -> NotificationContent {
        guard !request.kind.isEmpty,
            request.kind.utf8.allSatisfy({
                ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x2E
            })
        else { throw FieldRule.invalid("kind", "required: a-z, 0-9, '-' and '.'") }
        var data: [(key: String, value: String)] = []
        for pair in request.data {
            guard !pair.key.isEmpty else { throw FieldRule.invalid("data.key", "required") }
            data.append((pair.key, pair.value))
        }
        return NotificationContent(
            kind: request.kind,
            title: try FieldRule.text(request.title, field: "title", maxCharacters: 100, required: true),
            body: try FieldRule.text(request.body, field: "body", maxCharacters: 1_000, required: false), data: data,
            pushOnly: request.pushOnly)
    }

    static func notification(_ record: NotificationRecord) -> YediAccount.Notification {
        YediAccount.Notification(
            id: record.id, kind: record.content.kind, title: record.content.title, body: record.content.body,
            data: record.content.data.map { YediAccount.NotificationValue(key: $0.key, value: $0.value) },
            createdAtMs: record.createdAtMilliseconds, read: record.readAtMilliseconds != nil)
    }
}
