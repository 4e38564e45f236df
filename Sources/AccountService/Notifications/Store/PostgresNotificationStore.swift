import Logging
import PostgresNIO
import RPCAccess
import RPCCore
import ServiceRuntime

/// `NotificationStore` on PostgreSQL, beside the users the rows belong to, for several replicas of
/// AccountService on one database. Writes run at READ COMMITTED, each guarantee held by a row lock or
/// `ON CONFLICT`; every read is one statement (one snapshot).
struct PostgresNotificationStore: NotificationStore {
    let postgres: ServicePostgres
    let notifier: PostgresNotifier

    static let logger = Logger(label: "yedi.account.postgres.inbox")

    // MARK: Devices

    /// The user's row is locked (`FOR NO KEY UPDATE`) for the transaction: the user is still there when
    /// the device is written, and two registrations of one user, on any replica, trim the quota one after
    /// the other (each sees the other's device).
    func registerDevice(_ device: DeviceRecord, keep: Int) async throws -> Bool {
        try await postgres.write { tx in
            guard
                try await !tx.query(
                    """
                    SELECT 1 FROM app_user WHERE id = \(device.userID) AND app = \(device.app.rawValue)
                    FOR NO KEY UPDATE
                    """
                ).isEmpty
            else { throw NotificationStoreError.noSuchUser }
            return try await Self.register(device, keep: keep, tx)
        }
    }

    /// Registers `device` for its (existing, locked or new in `tx`) user in the caller's transaction (also
    /// SLP's sign-up): a token another user had moves to this one; the user keeps their newest `keep`
    /// devices. True when the token was not this user's before.
    ///
    /// Two registrations of one token at once (two users, two replicas) meet on `(app, token)`: the row is
    /// read locked, or inserted with `ON CONFLICT DO NOTHING`; an insert that found the other's row (it
    /// waited for its commit) reads it again, locked, and moves it. Never a unique violation.
    static func register(_ device: DeviceRecord, keep: Int, _ tx: PostgresTransaction) async throws -> Bool {
        let app = device.app.rawValue
        var owner: String?
        for attempt in 1...3 {
            if let row = try await tx.query(
                "SELECT user_id FROM device WHERE app = \(app) AND token = \(device.token) FOR UPDATE"
            ).first {
                owner = try row.decode(String.self)
                // The install signed in as someone else, or again: the token now pushes to this session only.
                try await tx.query(
                    """
                    UPDATE device SET user_id = \(device.userID), platform = \(device.platform.rawValue),
                        session_family_id = \(device.sessionFamilyID), registered_at_ms = \(device.registeredAtMilliseconds)
                    WHERE app = \(app) AND token = \(device.token)
                    """)
                break
            }
            let inserted = try await tx.query(
                """
                INSERT INTO device (id, user_id, app, platform, token, session_family_id, registered_at_ms)
                VALUES (\(device.id), \(device.userID), \(app), \(device.platform.rawValue), \(device.token),
                    \(device.sessionFamilyID), \(device.registeredAtMilliseconds))
                ON CONFLICT (app, token) DO NOTHING RETURNING 1
                """)
            if !inserted.isEmpty { break }
            // Registered by a transaction that committed meanwhile (or forgotten again since): look again.
            guard attempt < 3 else {
                throw RPCError(
                    code: .unavailable, message: "the device changed meanwhile; nothing was applied: try again")
            }
        }
        // The quota keeps the newest: the oldest registration is likely an uninstalled app's. A moved token
        // keeps its `seq`, as SQLite's row keeps its rowid.
        try await tx.query(
            """
            DELETE FROM device WHERE id IN (
                SELECT id FROM device WHERE user_id = \(device.userID) AND app = \(app)
                ORDER BY registered_at_ms DESC, seq DESC OFFSET \(keep))
            """)
        return owner != device.userID
    }

    func unregisterDevice(userID: String, app: AppID, token: String) async throws -> Bool {
        try await postgres.write { tx in
            try await !tx.query(
                """
                DELETE FROM device WHERE user_id = \(userID) AND app = \(app.rawValue) AND token = \(token)
                RETURNING 1
                """
            ).isEmpty
        }
    }

    func devices(userID: String, app: AppID) async throws -> [DeviceRecord] {
        try await rows(
            """
            SELECT id, user_id, app, platform, token, session_family_id, registered_at_ms FROM device
            WHERE user_id = \(userID) AND app = \(app.rawValue) ORDER BY registered_at_ms, seq
            """
        ).map { row in
            let (id, userID, app, platform, token, family, registeredAt) = try row.decode(
                (String, String, String, String, String, String, Int64).self)
            return DeviceRecord(
                id: id, userID: userID, app: AppID(rawValue: app), platform: PushPlatform(rawValue: platform) ?? .fcm,
                token: token, sessionFamilyID: family, registeredAtMilliseconds: registeredAt)
        }
    }

    func forgetDeviceToken(_ token: String) async throws -> Int {
        try await postgres.write { tx in
            try await tx.query("DELETE FROM device WHERE token = \(token) RETURNING 1").count
        }
    }

    /// One statement outside a transaction (one snapshot), its rows collected.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await postgres.read { connection in try await connection.query(query, logger: Self.logger).collect() }
    }
}
