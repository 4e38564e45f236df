import GRDB
import ServiceRuntime

/// Housetainer's member type beside the public fields the directories cache (`BatchGetUsers`).
extension SQLiteAccountStore {
    func memberTypes(userIDs ids: [String]) async throws -> [String: String] {
        guard !ids.isEmpty else { return [:] }
        return try await database.read { db in
            var types: [String: String] = [:]
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT user_id, type FROM housetainer_member
                    WHERE user_id IN (\(ServiceDatabase.placeholders(ids.count)))
                    """,
                arguments: StatementArguments(ids))
            {
                types[row["user_id"]] = row["type"]
            }
            return types
        }
    }
}
