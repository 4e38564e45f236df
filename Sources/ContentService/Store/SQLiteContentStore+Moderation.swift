import Foundation
import GRDB
import RPCAccess
import ServiceRuntime
import YediProto

/// Operators' hides and features: a column on the content's own row (so every list filters in its
/// query and pages stay full), and a line in the app's operator log through the outbox.
extension SQLiteContentStore {
    func moderate(_ change: ContentModerationChange, log: YediModeration.RecordOperatorActionRequest) async throws
        -> Bool
    {
        if change.kind == .event || change.kind == .house {
            return try await moderateDisplay(change, log: log)
        }
        let (table, column, set): (String, String, Bool)
        switch (change.kind, change.action) {
        case (.post, .hide), (.review, .hide): (table, column, set) = (change.kind.table, "hidden_at_ms", true)
        case (.post, .show), (.review, .show): (table, column, set) = (change.kind.table, "hidden_at_ms", false)
        case (.post, .feature): (table, column, set) = ("post", "featured_at_ms", true)
        case (.post, .unfeature): (table, column, set) = ("post", "featured_at_ms", false)
        case (.review, .feature), (.review, .unfeature), (.event, _), (.house, _): throw ContentStoreError.notFound
        }
        let outbox = self.outbox
        return try await database.write { db in
            guard
                let designerID = try String.fetchOne(
                    db, sql: "SELECT designer_id FROM \(table) WHERE id = ? AND app = ?",
                    arguments: [change.id, change.app.rawValue])
            else { throw ContentStoreError.notFound }
            try db.execute(
                sql: set
                    ? "UPDATE \(table) SET \(column) = ? WHERE id = ? AND \(column) IS NULL"
                    : "UPDATE \(table) SET \(column) = NULL WHERE id = ? AND \(column) IS NOT NULL",
                arguments: set ? [change.atMilliseconds, change.id] : [change.id])
            guard db.changesCount == 1 else { return false }
            if change.kind == .review { try Self.recomputeSummary(designerID, db) }
            try outbox.enqueue(
                in: db, peer: "account", method: YediModeration.Moderation.Method.recordOperatorAction, request: log)
            return true
        }
    }
}

extension SQLiteContentStore {
    /// Hides (display N) or shows (display Y) a Housetainer event or house of the change's app: one flag
    /// with the admin's `SetEventDisplay` / `SetHouseDisplay`, so a hidden one leaves every list, picks
    /// included, and its owner still sees it. Logged as the other changes, in the same transaction.
    private func moderateDisplay(_ change: ContentModerationChange, log: YediModeration.RecordOperatorActionRequest)
        async throws -> Bool
    {
        guard change.action == .hide || change.action == .show else { throw ContentStoreError.notFound }
        let table = change.kind.table
        let displayed = change.action == .show
        let outbox = self.outbox
        return try await database.write { db in
            guard
                try Bool.fetchOne(
                    db, sql: "SELECT displayed FROM \(table) WHERE id = ? AND app = ?",
                    arguments: [change.id, change.app.rawValue]) != nil
            else { throw ContentStoreError.notFound }
            try db.execute(
                sql: "UPDATE \(table) SET displayed = ? WHERE id = ? AND displayed = ?",
                arguments: [displayed, change.id, !displayed])
            guard db.changesCount == 1 else { return false }
            try outbox.enqueue(
                in: db, peer: "account", method: YediModeration.Moderation.Method.recordOperatorAction, request: log)
            return true
        }
    }
}

extension ContentModerationChange.Kind {
    fileprivate var table: String {
        switch self {
        case .post: "post"
        case .review: "review"
        case .event: "housetainer_event"
        case .house: "housetainer_house"
        }
    }
}
