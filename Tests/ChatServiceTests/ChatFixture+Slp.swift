import Foundation
import GRDB
import ServiceRuntime

@testable import AccountService
@testable import ChatService

/// SLP members and their match rooms, for the tests of match chat's pushes (issue 28, "Match chat").
extension ChatFixture {
    /// An SLP member: an account in AccountService (the push goes to it), with a registered device when
    /// `device` names one, and a token.
    func slpMember(_ id: String, device: String? = nil) async throws -> User {
        let env = account.environment
        let store = SQLiteAccountStore(
            database: env.database, events: AccountEvents(outbox: env.outbox), revokedUsers: env.revokedUsers)
        let now = clock.nowMilliseconds
        try await store.createUser(
            UserRecord(
                id: id, role: "member", app: "slp", email: "", name: "닉\(id)", phone: "", gender: 1, birthDate: nil,
                passwordHash: nil, createdAtMilliseconds: now, nickname: "닉\(id)"),
            designer: nil,
            session: SessionRecord(
                id: "s-\(id)", familyID: "s-\(id)", userID: id, refreshHash: Array(id.utf8), createdAtMilliseconds: now,
                expiresAtMilliseconds: now + 86_400_000))
        if let device {
            try await env.database.write { db in
                _ = try SQLiteNotificationStore.register(
                    DeviceRecord(
                        id: "d-\(id)", userID: id, app: "slp", platform: .fcm, token: device,
                        sessionFamilyID: "s-\(id)",
                        registeredAtMilliseconds: now), keep: 10, db)
            }
        }
        let token = try harness.token(user: id, role: "member", app: "slp", now: clock.now)
        return User(id: id, token: token, name: id)
    }

    /// The match room of `a` and `b`, opened as AccountService opens it when they match.
    func openMatchRoom(_ a: User, _ b: User, match: String = "m-1") async throws {
        _ = try await asService("account") {
            try await $0.openMatchRoom(.init(matchID: match, memberA: a.id, memberB: b.id))
        }
    }

    /// Match chat pushes that reached `userID`'s notification inbox in AccountService.
    func pushes(to userID: String) async throws -> Int {
        try await account.environment.database.read { db in
            try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM notification WHERE user_id = ? AND kind = ?",
                arguments: [userID, OfflinePushes.kind]) ?? 0
        }
    }
}
