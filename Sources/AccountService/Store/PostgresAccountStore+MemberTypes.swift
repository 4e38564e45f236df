import PostgresNIO
import ServiceRuntime

/// Housetainer's member type beside the public fields the directories cache (`BatchGetUsers`). Its table,
/// `housetainer_member`, comes with Housetainer's first version (`HousetainerPostgresSchema.members`).
extension PostgresAccountStore {
    func memberTypes(userIDs ids: [String]) async throws -> [String: String] {
        guard !ids.isEmpty else { return [:] }
        var types: [String: String] = [:]
        for row in try await rows("SELECT user_id, type FROM housetainer_member WHERE user_id = ANY(\(ids))") {
            let (id, type) = try row.decode((String, String).self)
            types[id] = type
        }
        return types
    }
}
