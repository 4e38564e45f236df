import GRDB
import RPCAccess
import ServiceRuntime

/// `NotificationStore` on AccountService's SQLite database, beside the users the rows belong to.
struct SQLiteNotificationStore: NotificationStore {
    let database: ServiceDatabase
    let notifier: Notifier

    // MARK: Devices

    func registerDevice(_ device: DeviceRecord, keep: Int) async throws -> Bool {
        try await database.write { db in
            guard
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM user WHERE id = ? AND app = ?",
                    arguments: [device.userID, device.app.rawValue]) == true
            else { throw NotificationStoreError.noSuchUser }
            return try Self.register(device, keep: keep, db)
        }
    }

    /// Registers `device` for its (existing) user in the caller's transaction (also SLP's sign-up): a
    /// token another user had moves to this one; the user keeps their newest `keep` devices. True when
    /// the token was not this user's before.
    static func register(_ device: DeviceRecord, keep: Int, _ db: Database) throws -> Bool {
        let owner = try String.fetchOne(
            db, sql: "SELECT user_id FROM device WHERE app = ? AND token = ?",
            arguments: [device.app.rawValue, device.token])
        if owner == nil {
            try db.execute(
                sql: """
                    INSERT INTO device (id, user_id, app, platform, token, session_family_id, registered_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    device.id, device.userID, device.app.rawValue, device.platform.rawValue, device.token,
                    device.sessionFamilyID, device.registeredAtMilliseconds,
                ])
        } else {
            // The install signed in as someone else, or again: the token now pushes to this session only.
            try db.execute(
                sql: """
                    UPDATE device SET user_id = ?, platform = ?, session_family_id = ?, registered_at_ms = ?
                    WHERE app = ? AND token = ?
                    """,
                arguments: [
                    device.userID, device.platform.rawValue, device.sessionFamilyID,
                    device.registeredAtMilliseconds, device.app.rawValue, device.token,
                ])
        }
        // The quota keeps the newest: the oldest registration is likely an uninstalled app's.
        try db.execute(
            sql: """
                DELETE FROM device WHERE rowid IN (
                    SELECT rowid FROM device WHERE user_id = ? AND app = ?
                    ORDER BY registered_at_ms DESC, rowid DESC LIMIT -1 OFFSET ?)
                """,
            arguments: [device.userID, device.app.rawValue, keep])
        return owner != device.userID
    }

    func unregisterDevice(userID: String, app: AppID, token: String) async throws -> Bool {
        try await database.write { db in
            try db.execute(
                sql: "DELETE FROM device WHERE user_id = ? AND app = ? AND token = ?",
                arguments: [userID, app.rawValue, token])
            return db.changesCount > 0
        }
    }

    func devices(userID: String, app: AppID) async throws -> [DeviceRecord] {
        try await database.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM device WHERE user_id = ? AND app = ? ORDER BY registered_at_ms, rowid",
                arguments: [userID, app.rawValue]
            ).map { row in
                DeviceRecord(
                    id: row["id"], userID: row["user_id"], app: AppID(rawValue: row["app"]),
                    platform: PushPlatform(rawValue: row["platform"]) ?? .fcm, token: row["token"],
                    sessionFamilyID: row["session_family_id"], registeredAtMilliseconds: row["registered_at_ms"])
            }
        }
    }

    func forgetDeviceToken(_ token: String) async throws -> Int {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM device WHERE token = ?", arguments: [token])
            return db.changesCount
        }
    }

    /// Removes the devices a session family registered, in the transaction that signs it out.
    static func removeDevices(sessionFamilyID: String, in db: Database) throws {
        try db.execute(sql: "DELETE FROM device WHERE session_family_id = ?", arguments: [sessionFamilyID])
    }

    // MARK: The inbox

    func notify(
        userID: String, app: AppID, _ content: NotificationContent, delivery: Delivery
    ) async throws -> String? {
        let notifier = self.notifier
        return try await database.write { db in
            guard try ReceiptLedger.isFirstDelivery(in: db, delivery, nowMilliseconds: notifier.clock.nowMilliseconds)
            else { return nil }
            return try notifier.notify(userID: userID, app: app, content, in: db)
        }
    }

    func notifications(userID: String, app: AppID, after position: PagePosition<Int64>?, limit: Int) async throws
        -> [(NotificationRecord, PagePosition<Int64>)]
    {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM notification WHERE user_id = ? AND app = ? AND seq < ?
                    ORDER BY seq DESC LIMIT ?
                    """,
                arguments: [userID, app.rawValue, position?.key ?? Int64.max, limit]
            ).map { row in
                let record = NotificationRecord(
                    id: row["id"], userID: row["user_id"], app: AppID(rawValue: row["app"]),
                    content: NotificationContent(
                        kind: row["kind"], title: row["title"], body: row["body"],
                        data: Notifier.decode(row["data"])),
                    createdAtMilliseconds: row["created_at_ms"], readAtMilliseconds: row["read_at_ms"])
                return (record, PagePosition(key: row["seq"] as Int64))
            }
        }
    }

    func unreadCount(userID: String, app: AppID) async throws -> Int64 {
        try await database.read { db in try Self.unread(userID: userID, app: app, db) }
    }

    func markRead(userID: String, app: AppID, ids: [String], upToID: String?, now: Int64) async throws -> Int64 {
        try await database.write { db in
            let mine = "user_id = ? AND app = ? AND read_at_ms IS NULL"
            for id in Set(ids) {
                try db.execute(
                    sql: "UPDATE notification SET read_at_ms = ? WHERE \(mine) AND id = ?",
                    arguments: [now, userID, app.rawValue, id])
            }
            if let upToID {
                try db.execute(
                    sql: """
                        UPDATE notification SET read_at_ms = ? WHERE \(mine) AND seq <= (
                            SELECT seq FROM notification WHERE id = ? AND user_id = ? AND app = ?)
                        """,
                    arguments: [now, userID, app.rawValue, upToID, userID, app.rawValue])
            }
            return try Self.unread(userID: userID, app: app, db)
        }
    }

    func pruneNotifications(createdBefore: Int64) async throws -> Int {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM notification WHERE created_at_ms < ?", arguments: [createdBefore])
            return db.changesCount
        }
    }

    static func unread(userID: String, app: AppID, _ db: Database) throws -> Int64 {
        try Int64.fetchOne(
            db, sql: "SELECT count(*) FROM notification WHERE user_id = ? AND app = ? AND read_at_ms IS NULL",
            arguments: [userID, app.rawValue]) ?? 0
    }
}
