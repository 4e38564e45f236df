import PostgresNIO
import RPCAccess
import ServiceRuntime

/// What operators do on PostgreSQL: answers, suspensions and the log that records them, each logged in
/// the transaction of the action.
extension PostgresModerationStore {
    /// The answer is claimed in one statement: of two operators answering at once (on any replica), the
    /// second's update waits for the first's commit, then finds the case answered.
    func answer(caseID: String, app: AppID, answer: String, by action: OperatorActionRecord) async throws
        -> CaseRecord
    {
        try await postgres.write { tx in
            if let row = try await tx.query(
                """
                UPDATE moderation_case SET answer = \(answer), answered_by = \(action.operatorID),
                    answered_at_ms = \(action.atMilliseconds)
                WHERE id = \(caseID) AND app = \(app.rawValue) AND answer IS NULL
                RETURNING *
                """
            ).first {
                try await Self.log(action, tx)
                return try Self.caseRecord(row)
            }
            guard
                try await !tx.query("SELECT 1 FROM moderation_case WHERE id = \(caseID) AND app = \(app.rawValue)")
                    .isEmpty
            else { throw AccountStoreError.notFound }
            throw ModerationStoreError.alreadyAnswered
        }
    }

    /// The member's row is updated (and so locked) first: their sessions end, their devices go and their
    /// tokens are revoked here and, through the outbox, in every service, all in this transaction.
    func suspend(userID: String, app: AppID, until: Int64, by action: OperatorActionRecord) async throws {
        let revokedUsers = self.revokedUsers
        let events = self.events
        try await postgres.write { tx in
            guard
                try await !tx.query(
                    "UPDATE app_user SET suspended_until_ms = \(until) WHERE id = \(userID) AND app = \(app.rawValue) RETURNING 1"
                ).isEmpty
            else { throw AccountStoreError.notFound }
            let now = action.atMilliseconds
            try await PostgresAccountStore.revokeEverySession(
                userID: userID, now: now, tokensUpTo: now, revokedUsers: revokedUsers, events: events, tx)
            try await Self.log(action, tx)
        }
    }

    func liftSuspension(userID: String, app: AppID, by action: OperatorActionRecord) async throws {
        try await postgres.write { tx in
            guard
                try await !tx.query(
                    "UPDATE app_user SET suspended_until_ms = NULL WHERE id = \(userID) AND app = \(app.rawValue) RETURNING 1"
                ).isEmpty
            else { throw AccountStoreError.notFound }
            try await Self.log(action, tx)
        }
    }

    func operatorActions(app: AppID, after: PagePosition<Int64>?, limit: Int) async throws -> [OperatorActionRecord] {
        try await rows(
            """
            SELECT id, app, operator_id, action, subject, detail, at_ms FROM operator_action
            WHERE app = \(app.rawValue) AND (\(after?.key)::bigint IS NULL OR (at_ms, id) < (\(after?.key), \(after?.id)))
            ORDER BY at_ms DESC, id DESC LIMIT \(limit)
            """
        ).map { row in
            let (id, app, operatorID, action, subject, detail, at) = try row.decode(
                (String, String, String, String, String, String, Int64).self)
            return OperatorActionRecord(
                id: id, app: AppID(rawValue: app), operatorID: operatorID, action: action, subject: subject,
                detail: detail, atMilliseconds: at)
        }
    }

    /// One statement: a repeated delivery, even on two replicas at once, finds the id taken.
    func recordOperatorAction(_ action: OperatorActionRecord) async throws -> Bool {
        try await postgres.write { tx in
            try await !tx.query(
                """
                INSERT INTO operator_action (id, app, operator_id, action, subject, detail, at_ms)
                VALUES (\(action.id), \(action.app.rawValue), \(action.operatorID), \(action.action), \(action.subject),
                    \(action.detail), \(action.atMilliseconds))
                ON CONFLICT (id) DO NOTHING RETURNING 1
                """
            ).isEmpty
        }
    }

    // MARK: Rows

    static func log(_ action: OperatorActionRecord, _ tx: PostgresTransaction) async throws {
        try await tx.query(
            """
            INSERT INTO operator_action (id, app, operator_id, action, subject, detail, at_ms)
            VALUES (\(action.id), \(action.app.rawValue), \(action.operatorID), \(action.action), \(action.subject),
                \(action.detail), \(action.atMilliseconds))
            """)
    }

    static func caseRecord(_ row: PostgresRow) throws -> CaseRecord {
        let row = row.makeRandomAccess()
        let reasons = try row["reasons"].decode(String.self)
        return CaseRecord(
            id: try row["id"].decode(String.self), app: AppID(rawValue: try row["app"].decode(String.self)),
            kind: CaseRecord.Kind(rawValue: try row["kind"].decode(String.self)) ?? .inquiry,
            writerID: try row["writer_id"].decode(String.self), reporteeID: try row["reportee_id"].decode(String?.self),
            reasons: reasons.isEmpty ? [] : reasons.split(separator: "\n").map(String.init),
            title: try row["title"].decode(String.self), content: try row["content"].decode(String.self),
            answer: try row["answer"].decode(String?.self), answeredBy: try row["answered_by"].decode(String?.self),
            answeredAtMilliseconds: try row["answered_at_ms"].decode(Int64?.self),
            createdAtMilliseconds: try row["created_at_ms"].decode(Int64.self))
    }
}
