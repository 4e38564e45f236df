import GRDB

/// SLP's part of account deletion, in `deleteAccount`'s transaction (before the user row goes, whose
/// cascade removes the profile, the queue row and its position, requests both ways and the member's
/// match rows).
extension SQLiteSlpStore {
    /// Takes back the flags of the ratings the member wrote from their partners' counters, and removes
    /// the member's matches: a partner in an active match with them is general at once, without a
    /// penalty, and no SLP row names the member afterwards (ratings of those matches go with them).
    static func forget(_ userID: String, _ db: Database) throws {
        let written = try Row.fetchAll(
            db, sql: "SELECT ratee_id, flags FROM slp_rating WHERE rater_id = ?", arguments: [userID])
        for rating in written {
            let rateeID: String = rating["ratee_id"]
            guard
                let text = try String.fetchOne(
                    db, sql: "SELECT reputation FROM slp_profile WHERE user_id = ?", arguments: [rateeID])
            else { continue }
            var counters = SlpRules.decode(text)
            for (index, flag) in SlpRules.decode(rating["flags"]).enumerated() where flag == 1 && index < counters.count
            {
                counters[index] = max(0, counters[index] - 1)
            }
            try db.execute(
                sql: "UPDATE slp_profile SET reputation = ? WHERE user_id = ?",
                arguments: [SlpRules.encode(counters), rateeID])
        }
        try db.execute(sql: "DELETE FROM slp_match WHERE user_a = ? OR user_b = ?", arguments: [userID, userID])
    }
}
