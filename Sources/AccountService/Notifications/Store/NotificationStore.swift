import RPCAccess
import ServiceRuntime

/// Where AccountService keeps users' push devices and notification inboxes (docs/account.md, "Devices
/// and the inbox"). Handlers see only this protocol (the SQLite implementation is
/// `SQLiteNotificationStore`), and every implementation passes `InboxStoreContract`.
///
/// Every method is one transaction; everything is scoped to one app, so a user of one app never reads
/// or changes another app's rows. The rows belong to the user: sign-out of the registering session and
/// account deletion remove them in their own transactions (`SQLiteAccountStore`).
protocol NotificationStore: Sendable {
    // MARK: Devices

    /// Registers `device`: a token already registered in its app is moved to `device`'s user and session
    /// (one device, idempotent); a new one beyond `keep` devices of the user replaces the oldest.
    /// Answers whether the token was not this user's before; `NotificationStoreError.noSuchUser` when
    /// the user is not of the device's app (a deleted account's token still in its 15 minutes).
    func registerDevice(_ device: DeviceRecord, keep: Int) async throws -> Bool
    /// Removes the user's registration of `token` in `app`; answers whether there was one.
    func unregisterDevice(userID: String, app: AppID, token: String) async throws -> Bool
    /// The user's devices in `app`, oldest first.
    func devices(userID: String, app: AppID) async throws -> [DeviceRecord]
    /// Forgets `token` in every app (the provider said it is dead); answers how many rows went.
    func forgetDeviceToken(_ token: String) async throws -> Int

    // MARK: The inbox

    /// Writes a notification for `userID` in `app` and queues a push to each of their devices there
    /// (`Notifier`), in one transaction, applied once per `delivery`. Answers the notification's id; nil
    /// when the delivery was applied before, or there is no such user in `app` (deleted meanwhile).
    func notify(
        userID: String, app: AppID, _ content: NotificationContent, delivery: Delivery
    ) async throws -> String?
    /// The user's notifications in `app`, newest first, after `position` (the `seq` of the last one seen).
    func notifications(userID: String, app: AppID, after position: PagePosition<Int64>?, limit: Int) async throws
        -> [(NotificationRecord, PagePosition<Int64>)]
    func unreadCount(userID: String, app: AppID) async throws -> Int64
    /// Marks read the user's notifications among `ids`, and with `upToID`, that one and every older one
    /// (an id of someone else's is ignored); answers the unread count after.
    func markRead(userID: String, app: AppID, ids: [String], upToID: String?, now: Int64) async throws -> Int64
    /// Deletes notifications created before `createdBefore` (retention); answers how many.
    func pruneNotifications(createdBefore: Int64) async throws -> Int
}

enum NotificationStoreError: Error, Equatable {
    /// No such user, or not of the app named.
    case noSuchUser
}
