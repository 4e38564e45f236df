import PostgresNIO
import ServiceRuntime

/// SLP's part of account deletion on PostgreSQL, in `PostgresAccountStore.deleteAccount`'s transaction
/// (before the user row goes, whose cascade removes the profile, the queue row,
/// requests both ways and the member's match rows).
extension PostgresSlpStore {
    /// Takes back the flags of the ratings the member wrote from their partners' counters, and removes
    /// the member's matches: a partner in an active match with them is general at once, without a
    /// penalty, and no SLP row names the member afterwards (ratings of those matches go with them).
    ///
    /// The deletion holds the member's account row (`FOR UPDATE`), which every SLP write of the member
    /// key-share-locks first: none is under way or can start. The member's profile and every partner's are
    /// then locked in user-id order like every other write of this store, so a partner's counters are not
    /// being changed by a rating elsewhere while they are given back. (Should a partner appear between the
    /// read and the lock, a second round locks them too.)
    static func forget(_ userID: String, _ tx: PostgresTransaction) async throws {
        var locked: Set<String> = []
        while true {
            let partners = try await tx.query(
                "SELECT DISTINCT partner_id FROM slp_match_member WHERE user_id = \(userID)"
            ).map { try $0.decode(String.self) }
            let wanted = Set(partners).union([userID])
            if wanted.isSubset(of: locked) { break }
            _ = try await lockProfiles(Array(wanted.union(locked)), tx)
            locked.formUnion(wanted)
        }
        for rating in try await tx.query("SELECT ratee_id, flags FROM slp_rating WHERE rater_id = \(userID)") {
            let (rateeID, flags) = try rating.decode((String, String).self)
            guard
                let text = try await tx.query(
                    "SELECT reputation FROM slp_profile WHERE user_id = \(rateeID)"
                ).first?.decode(String.self)
            else { continue }
            var counters = SlpRules.decode(text)
            for (index, flag) in SlpRules.decode(flags).enumerated() where flag == 1 && index < counters.count {
                counters[index] = max(0, counters[index] - 1)
            }
            try await tx.query(
                "UPDATE slp_profile SET reputation = \(SlpRules.encode(counters)) WHERE user_id = \(rateeID)")
        }
        try await tx.query("DELETE FROM slp_match WHERE user_a = \(userID) OR user_b = \(userID)")
    }
}
