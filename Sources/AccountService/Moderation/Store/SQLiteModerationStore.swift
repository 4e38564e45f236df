import Foundation
import GRDB
import RPCAccess
import ServiceRuntime
import YediProto

/// `ModerationStore` on AccountService's SQLite database.
struct SQLiteModerationStore: ModerationStore {
    let database: ServiceDatabase
    /// Suspensions revoke the member here and, through the outbox, everywhere.
    let revokedUsers: RevokedUsers
    let events: AccountEvents

    func report(_ report: CaseRecord, quota: Quota?, replacingEarlier: Bool) async throws -> (id: String, counted: Bool)
    {
        try await database.write { db in
            guard let reportee = report.reporteeID, try Self.isMember(reportee, of: report.app, db) else {
                throw AccountStoreError.notFound
            }
            if let earlier = try String.fetchOne(
                db,
                sql:
                    "SELECT id FROM moderation_case WHERE kind = 'report' AND app = ? AND writer_id = ? AND reportee_id = ?",
                arguments: [report.app.rawValue, report.writerID, reportee])
            {
                if replacingEarlier {
                    try db.execute(
                        sql: "UPDATE moderation_case SET reasons = ?, title = ?, content = ? WHERE id = ?",
                        arguments: [report.reasons.joined(separator: "\n"), report.title, report.content, earlier])
                }
                return (earlier, false)
            }
            try Self.checkQuota(quota, writerID: report.writerID, now: report.createdAtMilliseconds, db)
            try Self.insert(report, db)
            return (report.id, true)
        }
    }

    func submitInquiry(_ inquiry: CaseRecord, quota: Quota?) async throws {
        try await database.write { db in
            try Self.checkQuota(quota, writerID: inquiry.writerID, now: inquiry.createdAtMilliseconds, db)
            try Self.insert(inquiry, db)
        }
    }

    func reporterCount(of userID: String, app: AppID) async throws -> Int {
        try await database.read { db in
            try Int.fetchOne(
                db,
                sql: "SELECT COUNT(*) FROM moderation_case WHERE kind = 'report' AND app = ? AND reportee_id = ?",
                arguments: [app.rawValue, userID]) ?? 0
        }
    }

    func cases(writerID: String, app: AppID, after: PagePosition<Int64>?, limit: Int) async throws -> [CaseRecord] {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM moderation_case WHERE writer_id = ? AND app = ?
                        AND (? IS NULL OR (created_at_ms, id) < (?, ?))
                    ORDER BY created_at_ms DESC, id DESC LIMIT ?
                    """,
                arguments: [writerID, app.rawValue, after?.key, after?.key, after?.id, limit]
            ).map(Self.caseRecord)
        }
    }

    func cases(_ filter: CaseFilter, app: AppID, after: PagePosition<Int64>?, limit: Int) async throws -> [CaseRecord] {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM moderation_case WHERE app = ? AND (? IS NULL OR kind = ?)
                        AND (? = 0 OR answer IS NULL) AND (? IS NULL OR (created_at_ms, id) < (?, ?))
                    ORDER BY created_at_ms DESC, id DESC LIMIT ?
                    """,
                arguments: [
                    app.rawValue, filter.kind?.rawValue, filter.kind?.rawValue, filter.unansweredOnly,
                    after?.key, after?.key, after?.id, limit,
                ]
            ).map(Self.caseRecord)
        }
    }

    func answer(caseID: String, app: AppID, answer: String, by action: OperatorActionRecord) async throws
        -> CaseRecord
    {
        try await database.write { db in
            try db.execute(
                sql: """
                    UPDATE moderation_case SET answer = ?, answered_by = ?, answered_at_ms = ?
                    WHERE id = ? AND app = ? AND answer IS NULL
                    """,
                arguments: [answer, action.operatorID, action.atMilliseconds, caseID, app.rawValue])
            let answered = db.changesCount == 1
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT * FROM moderation_case WHERE id = ? AND app = ?",
                    arguments: [caseID, app.rawValue])
            else { throw AccountStoreError.notFound }
            guard answered else { throw ModerationStoreError.alreadyAnswered }
            try Self.log(action, db)
            return try Self.caseRecord(row)
        }
    }

    func suspend(userID: String, app: AppID, until: Int64, by action: OperatorActionRecord) async throws {
        let revokedUsers = self.revokedUsers
        let events = self.events
        try await database.write { db in
            try db.execute(
                sql: "UPDATE user SET suspended_until_ms = ? WHERE id = ? AND app = ?",
                arguments: [until, userID, app.rawValue])
            guard db.changesCount == 1 else { throw AccountStoreError.notFound }
            let now = action.atMilliseconds
            try SQLiteAccountStore.revokeEverySession(
                userID: userID, now: now, tokensUpTo: now, revokedUsers: revokedUsers, events: events, db)
            try Self.log(action, db)
        }
    }

    func liftSuspension(userID: String, app: AppID, by action: OperatorActionRecord) async throws {
        try await database.write { db in
            try db.execute(
                sql: "UPDATE user SET suspended_until_ms = NULL WHERE id = ? AND app = ?",
                arguments: [userID, app.rawValue])
            guard db.changesCount == 1 else { throw AccountStoreError.notFound }
            try Self.log(action, db)
        }
    }

    func operatorActions(app: AppID, after: PagePosition<Int64>?, limit: Int) async throws -> [OperatorActionRecord] {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM operator_action WHERE app = ? AND (? IS NULL OR (at_ms, id) < (?, ?))
                    ORDER BY at_ms DESC, id DESC LIMIT ?
                    """,
                arguments: [app.rawValue, after?.key, after?.key, after?.id, limit]
            ).map { row in
                OperatorActionRecord(
                    id: row["id"], app: AppID(rawValue: row["app"]), operatorID: row["operator_id"],
                    action: row["action"], subject: row["subject"], detail: row["detail"], atMilliseconds: row["at_ms"])
            }
        }
    }

    // MARK: Rows

    func recordOperatorAction(_ action: OperatorActionRecord) async throws -> Bool {
        try await database.write { db in
            guard try Int.fetchOne(db, sql: "SELECT 1 FROM operator_action WHERE id = ?", arguments: [action.id]) == nil
            else { return false }
            try Self.log(action, db)
            return true
        }
    }

    static func isMember(_ userID: String, of app: AppID, _ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT 1 FROM user WHERE id = ? AND app = ?", arguments: [userID, app.rawValue])
            ?? false
    }

    /// Reports and inquiries the writer made since the start of the quota's day.
    static func checkQuota(_ quota: Quota?, writerID: String, now: Int64, _ db: Database) throws {
        guard let quota else { return }
        let today =
            try Int64.fetchOne(
                db, sql: "SELECT COUNT(*) FROM moderation_case WHERE writer_id = ? AND created_at_ms >= ?",
                arguments: [writerID, QuotaDay.start(of: now)]) ?? 0
        try quota.check(used: today)
    }

    static func insert(_ record: CaseRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO moderation_case (id, app, kind, writer_id, reportee_id, reasons, title, content, created_at_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                record.id, record.app.rawValue, record.kind.rawValue, record.writerID, record.reporteeID,
                record.reasons.joined(separator: "\n"), record.title, record.content, record.createdAtMilliseconds,
            ])
    }

    static func log(_ action: OperatorActionRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO operator_action (id, app, operator_id, action, subject, detail, at_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                action.id, action.app.rawValue, action.operatorID, action.action, action.subject, action.detail,
                action.atMilliseconds,
            ])
    }

    static func caseRecord(_ row: Row) throws -> CaseRecord {
        let reasons: String = row["reasons"]
        return CaseRecord(
            id: row["id"], app: AppID(rawValue: row["app"]),
            kind: CaseRecord.Kind(rawValue: row["kind"]) ?? .inquiry, writerID: row["writer_id"],
            reporteeID: row["reportee_id"],
            reasons: reasons.isEmpty ? [] : reasons.split(separator: "\n").map(String.init), title: row["title"],
            content: row["content"], answer: row["answer"], answeredBy: row["answered_by"],
            answeredAtMilliseconds: row["answered_at_ms"], createdAtMilliseconds: row["created_at_ms"])
    }
}
