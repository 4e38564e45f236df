import PostgresNIO
import RPCAccess
import ServiceRuntime
import YediProto

/// Operators' hides and features: a column on the content's own row, changed by one conditional `UPDATE`
/// (two operators at once: the second waits for the first's commit and changes nothing, so one log line),
/// and a line in the app's operator log through the outbox, in the same transaction.
extension PostgresContentStore {
    func moderate(_ change: ContentModerationChange, log: YediModeration.RecordOperatorActionRequest) async throws
        -> Bool
    {
        if change.kind == .event || change.kind == .house {
            return try await moderateDisplay(change, log: log)
        }
        let (table, column, set): (String, String, Bool)
        switch (change.kind, change.action) {
        case (.post, .hide): (table, column, set) = ("post", "hidden_at_ms", true)
        case (.review, .hide): (table, column, set) = ("review", "hidden_at_ms", true)
        case (.post, .show): (table, column, set) = ("post", "hidden_at_ms", false)
        case (.review, .show): (table, column, set) = ("review", "hidden_at_ms", false)
        case (.post, .feature): (table, column, set) = ("post", "featured_at_ms", true)
        case (.post, .unfeature): (table, column, set) = ("post", "featured_at_ms", false)
        case (.review, .feature), (.review, .unfeature), (.event, _), (.house, _): throw ContentStoreError.notFound
        }
        let outbox = self.outbox
        return try await postgres.write { tx in
            guard
                let designerID = try await tx.query(
                    "SELECT designer_id FROM \(unescaped: table) WHERE id = \(change.id) AND app = \(change.app.rawValue)"
                ).first?.decode(String.self)
            else { throw ContentStoreError.notFound }
            // A review's summary changes with it: under the designer's lock, before the row's.
            if change.kind == .review { try await Self.lockSummaries([designerID], tx) }
            let changed = try await tx.query(
                set
                    ? """
                    UPDATE \(unescaped: table) SET \(unescaped: column) = \(change.atMilliseconds)
                    WHERE id = \(change.id) AND \(unescaped: column) IS NULL RETURNING 1
                    """
                    : """
                    UPDATE \(unescaped: table) SET \(unescaped: column) = NULL
                    WHERE id = \(change.id) AND \(unescaped: column) IS NOT NULL RETURNING 1
                    """)
            guard !changed.isEmpty else { return false }
            if change.kind == .review { try await Self.recomputeSummary(designerID, tx) }
            try await outbox.enqueue(
                in: tx, peer: "account", method: YediModeration.Moderation.Method.recordOperatorAction, request: log)
            return true
        }
    }

    /// Hides (display false) or shows a Housetainer event or house of the change's app, logged as the
    /// other changes in the same transaction.
    private func moderateDisplay(_ change: ContentModerationChange, log: YediModeration.RecordOperatorActionRequest)
        async throws -> Bool
    {
        guard change.action == .hide || change.action == .show else { throw ContentStoreError.notFound }
        let table = change.kind == .event ? "housetainer_event" : "housetainer_house"
        let displayed = change.action == .show
        let outbox = self.outbox
        return try await postgres.write { tx in
            guard
                try await !tx.query(
                    "SELECT 1 FROM \(unescaped: table) WHERE id = \(change.id) AND app = \(change.app.rawValue)"
                ).isEmpty
            else { throw ContentStoreError.notFound }
            guard
                try await !tx.query(
                    """
                    UPDATE \(unescaped: table) SET displayed = \(displayed)
                    WHERE id = \(change.id) AND displayed = \(!displayed) RETURNING 1
                    """
                ).isEmpty
            else { return false }
            try await outbox.enqueue(
                in: tx, peer: "account", method: YediModeration.Moderation.Method.recordOperatorAction, request: log)
            return true
        }
    }
}
