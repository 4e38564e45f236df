import RPCAccess

/// One app's push registration on one device, as the store keeps it.
struct DeviceRecord: Sendable, Hashable {
    var id: String
    var userID: String
    var app: AppID
    var platform: PushPlatform
    /// The provider's registration token; unique per app.
    var token: String
    /// The session family (the token's `sid`) that registered it: signing that session out removes it.
    var sessionFamilyID: String
    var registeredAtMilliseconds: Int64
}

/// The push providers a device registers with (`yedi.account.PushPlatform`), stored by name.
enum PushPlatform: String, Sendable, Hashable {
    case fcm, apns
}

/// What a notification says, before it has an id: what `Notifier.notify` writes and pushes.
struct NotificationContent: Sendable, Hashable {
    /// What happened, per app ("comment", "reservation-reminder").
    var kind: String
    var title: String
    var body: String
    /// Key/value pairs for the app, in order (the push's data, too).
    var data: [(key: String, value: String)]
    /// Pushed to the devices without an inbox row (the app keeps its notifications itself).
    var pushOnly = false

    static func == (left: Self, right: Self) -> Bool {
        left.kind == right.kind && left.title == right.title && left.body == right.body
            && left.data.map(\.key) == right.data.map(\.key) && left.data.map(\.value) == right.data.map(\.value)
            && left.pushOnly == right.pushOnly
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(title)
        hasher.combine(body)
        for pair in data {
            hasher.combine(pair.key)
            hasher.combine(pair.value)
        }
    }
}

/// A notification in a user's inbox.
struct NotificationRecord: Sendable, Hashable {
    var id: String
    var userID: String
    var app: AppID
    var content: NotificationContent
    var createdAtMilliseconds: Int64
    var readAtMilliseconds: Int64?
}
