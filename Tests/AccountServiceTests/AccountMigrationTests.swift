import Foundation
import GRDB
import XCTest

@testable import AccountService

/// Schema versions keep the data of the ones before: a database made before apps were tenants keeps
/// its accounts, sessions and follows, all in YeDi, and its address uniqueness per app.
final class AccountMigrationTests: XCTestCase {
    func testTenantAnAccountDatabaseFromBeforeAppsKeepsEveryRowInYeDi() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("account-\(UUID().uuidString).sqlite")
            .path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        let database = try DatabaseQueue(path: path)
        var migrator = DatabaseMigrator()
        AccountSchema.migrate(&migrator)
        try migrator.migrate(database, upTo: "account-4-pending-sign-ups")
        try database.write { db in
            for (id, role) in [("c1", "customer"), ("d1", "designer")] {
                try db.execute(
                    sql: """
                        INSERT INTO user (id, role, email, name, phone, gender, password_hash, created_at_ms)
                        VALUES (?, ?, ?, '이름', '01012345678', 1, '$scrypt$x', 1)
                        """,
                    arguments: [id, role, "\(id)@example.com"])
            }
            try db.execute(
                sql: """
                    INSERT INTO designer (user_id, description, skills, rank, shop_name, shop_phone, city, district,
                        detail, latitude, longitude, opening_hour, closing_hour, messenger_links, time_zone)
                    VALUES ('d1', '', '', 0, '가게', '', '서울', '강남구', '', 37.5, 127.0, 10, 20, '', 'Asia/Seoul')
                    """)
            try db.execute(sql: "INSERT INTO follow (customer_id, designer_id, followed_at_ms) VALUES ('c1', 'd1', 5)")
            try db.execute(
                sql: """
                    INSERT INTO session (id, family_id, user_id, refresh_hash, created_at_ms, expires_at_ms)
                    VALUES ('s1', 'f1', 'c1', x'01', 1, 1000)
                    """)
        }

        try migrator.migrate(database)

        try database.read { db in
            let users = try Row.fetchAll(
                db, sql: "SELECT id, app, email, password_hash, nickname FROM user ORDER BY id")
            XCTAssertEqual(users.map { $0["id"] as String }, ["c1", "d1"])
            XCTAssertEqual(Set(users.map { $0["app"] as String }), ["yedi"])
            XCTAssertEqual(users.map { $0["password_hash"] as String? }, ["$scrypt$x", "$scrypt$x"])
            XCTAssertEqual(users.map { $0["nickname"] as String? }, [nil, nil])
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM follow"), 1)
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM session WHERE user_id = 'c1'"), 1)
            XCTAssertEqual(try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").count, 0)
        }
        // The user table's foreign keys still hold: deleting the user cascades to the session.
        try database.write { db in
            try db.execute(sql: "PRAGMA foreign_keys = ON")
            try db.execute(sql: "DELETE FROM user WHERE id = 'c1'")
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM session"), 0)
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM follow"), 0)
        }
        // Unique per app, not overall.
        try database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO user (id, role, app, email, name, phone, gender, created_at_ms)
                    VALUES ('m1', 'member', 'slp', 'd1@example.com', '', '', 0, 1)
                    """)
            XCTAssertThrowsError(
                try db.execute(
                    sql: """
                        INSERT INTO user (id, role, app, email, name, phone, gender, created_at_ms)
                        VALUES ('d2', 'customer', 'yedi', 'd1@example.com', '', '', 0, 1)
                        """))
        }
    }

    /// `account-housetainer-2-issued-codes` rebuilds the invitation table: its rows, indexes and the
    /// trigger that forgets a deleted account's address survive, and a code may now have no inviter.
    func testHousetainerIssuedCodesMigrationKeepsInvitationsAndTheAddressTrigger() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("account-\(UUID().uuidString).sqlite")
            .path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        let database = try DatabaseQueue(path: path)
        var migrator = DatabaseMigrator()
        AccountServiceDefinition.migrate(&migrator)
        try migrator.migrate(database, upTo: "account-11-zipadoo")
        try database.write { db in
            for id in ["host", "guest"] {
                try db.execute(
                    sql: """
                        INSERT INTO user (id, role, app, email, name, phone, gender, created_at_ms)
                        VALUES (?, 'member', 'housetainer', ?, '', '', 0, 1)
                        """,
                    arguments: [id, "\(id)@example.kr"])
            }
            try db.execute(
                sql: """
                    INSERT INTO housetainer_invitation
                        (id, app, code, inviter_id, invitee_email, invitee_name, status, created_at_ms)
                    VALUES ('i1', 'housetainer', '12345678', 'host', 'guest@example.kr', '손님', 'S', 1),
                        ('i2', 'housetainer', '87654321', 'host', 'later@example.kr', '나중', 'S', 2)
                    """)
        }

        try migrator.migrate(database)

        try database.write { db in
            let kept = try Row.fetchAll(
                db, sql: "SELECT id, inviter_id, issued_by FROM housetainer_invitation ORDER BY id")
            XCTAssertEqual(kept.map { $0["id"] as String }, ["i1", "i2"])
            XCTAssertEqual(kept.map { $0["inviter_id"] as String? }, ["host", "host"])
            XCTAssertEqual(kept.map { $0["issued_by"] as String? }, [nil, nil])
            try db.execute(
                sql: """
                    INSERT INTO housetainer_invitation
                        (id, app, code, inviter_id, issued_by, invitee_email, invitee_name, status, created_at_ms)
                    VALUES ('i3', 'housetainer', '11112222', NULL, 'ht-admin', 'first@example.kr', '처음', 'S', 3)
                    """)
            XCTAssertThrowsError(
                try db.execute(
                    sql: """
                        INSERT INTO housetainer_invitation
                            (id, app, code, inviter_id, invitee_email, invitee_name, status, created_at_ms)
                        VALUES ('i4', 'housetainer', '33334444', NULL, 'x@example.kr', '엑스', 'S', 4)
                        """), "a code has an inviter or an issuing admin")
            // The trigger still forgets a deleted account's address; the inviter's codes cascade.
            try db.execute(sql: "DELETE FROM user WHERE id = 'guest'")
            let afterGuest = try String.fetchAll(db, sql: "SELECT id FROM housetainer_invitation ORDER BY id")
            XCTAssertEqual(afterGuest, ["i2", "i3"])
            try db.execute(sql: "DELETE FROM user WHERE id = 'host'")
            let afterHost = try String.fetchAll(db, sql: "SELECT id FROM housetainer_invitation ORDER BY id")
            XCTAssertEqual(afterHost, ["i3"])
            XCTAssertEqual(try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").count, 0)
            let indexes = try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'housetainer_invitation'")
            XCTAssertTrue(
                Set(indexes).isSuperset(of: ["housetainer_invitation_inviter", "housetainer_invitation_joined"]))
        }
    }
}
