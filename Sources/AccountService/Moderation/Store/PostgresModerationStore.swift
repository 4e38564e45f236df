import Logging
import PostgresNIO
import RPCAccess
import RPCCore
import ServiceRuntime

/// `ModerationStore` on PostgreSQL, for several replicas of AccountService on one database. Writes run at
/// READ COMMITTED: a report counts once per (app, reporter, reportee) by `moderation_case_one_report`, a
/// writer's daily quota is counted under the writer's advisory lock, a member named is held with the row
/// lock its foreign key takes; every read is one statement (one snapshot).
struct PostgresModerationStore: ModerationStore {
    let postgres: ServicePostgres
    /// Suspensions revoke the member here and, through the outbox, everywhere.
    let revokedUsers: RevokedUsers
    let events: PostgresAccountEvents

    static let logger = Logger(label: "yedi.account.postgres.moderation")

    // MARK: Members

    /// Two reports of one writer about one member at once (two replicas) meet on the unique index: the
    /// second insert waits for the first's commit and inserts nothing; the report it found is the earlier
    /// one, which it answers (and replaces) exactly as a later call would.
    func report(_ report: CaseRecord, quota: Quota?, replacingEarlier: Bool) async throws -> (id: String, counted: Bool)
    {
        try await postgres.write { tx in
            guard let reportee = report.reporteeID else { throw AccountStoreError.notFound }
            if quota != nil { try await Self.lockWriter(report.writerID, tx) }
            guard try await Self.isMember(reportee, of: report.app, tx) else { throw AccountStoreError.notFound }
            if let earlier = try await Self.earlierReport(report, reportee: reportee, tx) {
                return try await Self.keep(earlier, report, replacing: replacingEarlier, tx)
            }
            try await Self.checkQuota(quota, writerID: report.writerID, now: report.createdAtMilliseconds, tx)
            if try await Self.insert(report, tx) { return (report.id, true) }
            // Stored by a transaction that committed meanwhile (a call without a quota takes no lock).
            guard let earlier = try await Self.earlierReport(report, reportee: reportee, tx) else {
                throw RPCError(
                    code: .unavailable, message: "the report changed meanwhile; nothing was applied: try again")
            }
            return try await Self.keep(earlier, report, replacing: replacingEarlier, tx)
        }
    }

    func submitInquiry(_ inquiry: CaseRecord, quota: Quota?) async throws {
        try await postgres.write { tx in
            if quota != nil { try await Self.lockWriter(inquiry.writerID, tx) }
            try await Self.checkQuota(quota, writerID: inquiry.writerID, now: inquiry.createdAtMilliseconds, tx)
            _ = try await Self.insert(inquiry, tx)
        }
    }

    func reporterCount(of userID: String, app: AppID) async throws -> Int {
        try await rows(
            "SELECT count(*) FROM moderation_case WHERE kind = 'report' AND app = \(app.rawValue) AND reportee_id = \(userID)"
        ).first?.decode(Int.self) ?? 0
    }

    func cases(writerID: String, app: AppID, after: PagePosition<Int64>?, limit: Int) async throws -> [CaseRecord] {
        try await rows(
            """
            SELECT * FROM moderation_case WHERE writer_id = \(writerID) AND app = \(app.rawValue)
                AND (\(after?.key)::bigint IS NULL OR (created_at_ms, id) < (\(after?.key), \(after?.id)))
            ORDER BY created_at_ms DESC, id DESC LIMIT \(limit)
            """
        ).map(Self.caseRecord)
    }

    func cases(_ filter: CaseFilter, app: AppID, after: PagePosition<Int64>?, limit: Int) async throws -> [CaseRecord] {
        try await rows(
            """
            SELECT * FROM moderation_case WHERE app = \(app.rawValue)
                AND (\(filter.kind?.rawValue)::text IS NULL OR kind = \(filter.kind?.rawValue))
                AND (NOT \(filter.unansweredOnly) OR answer IS NULL)
                AND (\(after?.key)::bigint IS NULL OR (created_at_ms, id) < (\(after?.key), \(after?.id)))
            ORDER BY created_at_ms DESC, id DESC LIMIT \(limit)
            """
        ).map(Self.caseRecord)
    }

    // MARK: Steps

    /// Serializes one writer's quota-counted transactions (until commit or rollback) on a transaction-level
    /// advisory lock named by the writer, so that the count and the insert of two at once run one after
    /// the other. Taken first, before any row lock.
    static func lockWriter(_ writerID: String, _ tx: PostgresTransaction) async throws {
        try await PostgresAccountStore.lock("yedi.account.moderation-cases/" + writerID, tx)
    }

    /// Whether `userID` is a member of `app`, the row then held (`FOR KEY SHARE`, what the case's foreign key
    /// takes) until commit: a deletion committing meanwhile makes this wait and answer false.
    static func isMember(_ userID: String, of app: AppID, _ tx: PostgresTransaction) async throws -> Bool {
        try await !tx.query("SELECT 1 FROM app_user WHERE id = \(userID) AND app = \(app.rawValue) FOR KEY SHARE")
            .isEmpty
    }

    static func earlierReport(_ report: CaseRecord, reportee: String, _ tx: PostgresTransaction) async throws
        -> String?
    {
        try await tx.query(
            """
            SELECT id FROM moderation_case
            WHERE kind = 'report' AND app = \(report.app.rawValue) AND writer_id = \(report.writerID)
                AND reportee_id = \(reportee)
            """
        ).first?.decode(String.self)
    }

    /// The earlier report stands, its reasons, title and comment replaced by `report`'s when `replacing`.
    static func keep(_ earlier: String, _ report: CaseRecord, replacing: Bool, _ tx: PostgresTransaction)
        async throws -> (id: String, counted: Bool)
    {
        if replacing {
            try await tx.query(
                """
                UPDATE moderation_case SET reasons = \(report.reasons.joined(separator: "\n")), title = \(report.title),
                    content = \(report.content)
                WHERE id = \(earlier)
                """)
        }
        return (earlier, false)
    }

    /// Reports and inquiries the writer made since the start of the quota's day (after `lockWriter`, in a
    /// statement of its own: it sees every case the writer's previous transaction committed).
    static func checkQuota(_ quota: Quota?, writerID: String, now: Int64, _ tx: PostgresTransaction) async throws {
        guard let quota else { return }
        let today =
            try await tx.query(
                """
                SELECT count(*) FROM moderation_case
                WHERE writer_id = \(writerID) AND created_at_ms >= \(QuotaDay.start(of: now))
                """
            ).first?.decode(Int64.self) ?? 0
        try quota.check(used: today)
    }

    /// Inserts `record`; false when it is a report the writer already made about that member in the app.
    static func insert(_ record: CaseRecord, _ tx: PostgresTransaction) async throws -> Bool {
        try await !tx.query(
            """
            INSERT INTO moderation_case (id, app, kind, writer_id, reportee_id, reasons, title, content, created_at_ms)
            VALUES (\(record.id), \(record.app.rawValue), \(record.kind.rawValue), \(record.writerID),
                \(record.reporteeID), \(record.reasons.joined(separator: "\n")), \(record.title), \(record.content),
                \(record.createdAtMilliseconds))
            ON CONFLICT (app, writer_id, reportee_id) WHERE kind = 'report' DO NOTHING
            RETURNING 1
            """
        ).isEmpty
    }

    /// One statement outside a transaction (one snapshot), its rows collected.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await postgres.read { connection in try await connection.query(query, logger: Self.logger).collect() }
    }
}
