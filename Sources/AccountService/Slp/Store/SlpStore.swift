import ServiceRuntime

/// Where AccountService keeps SLP's profiles, queue, requests, matches and ratings (docs/slp.md).
/// Handlers see only this protocol; every method that changes two members changes both in one
/// transaction, and each decides its outcome inside that transaction (so concurrent accepts of one
/// member give one match).
protocol SlpStore: Sendable {
    /// SignUp: uses the ticket up and creates the account, its identity, first session, profile and
    /// device in one transaction, remembering the used ticket (by hash) until it would have expired.
    func signUp(_ signUp: SlpSignUpRecord) async throws -> SlpSignUpOutcome
    /// Whether a SignUp used the ticket with this hash (and it has not expired at `now`).
    func ticketUsed(hash: [UInt8], now: Int64) async throws -> Bool
    /// Stores the profile of an SLP member (`unknownUser` for anyone else); false when the member had
    /// one (kept as it was).
    func createProfile(_ profile: SlpProfileRecord) async throws -> Bool
    /// The member's profile with nickname and received comments; nil without one.
    func profile(userID: String) async throws -> SlpProfileRecord?
    /// Replaces the editable fields (`notOwned` for an avatar or background not owned, `noProfile`).
    func updateProfile(userID: String, _ update: SlpProfileUpdate) async throws -> SlpProfileRecord
    func state(userID: String) async throws -> SlpStateRecord
    /// Queues the member at `point` with `studies` (replacing an earlier entry), unless matched or in a
    /// penalty at `now`.
    func enterQueue(userID: String, at point: GeoPoint, studies: [String], now: Int64) async throws
        -> SlpEnterOutcome
    /// Takes the member out of the queue (and drops the requests to and from them); the active match
    /// instead when there is one.
    func leaveQueue(userID: String) async throws -> SlpActiveMatch?
    /// Queued members within `radius` metres of `centre`, nearest first, at most `limit`, without the
    /// caller and without those whose age does not fit the caller's range or whose range excludes the
    /// caller (ages on the Seoul date of `now`); and the queued members who requested the caller.
    func nearby(
        userID: String, around centre: GeoPoint, radius: Double, limit: Int, now: Int64
    ) async throws -> SlpNearbyRecord
    /// Asks `to` to study with `from` (both queued); matched at once (as `matchID`) when `to` had asked
    /// `from`. A stored request notifies `to` in the same transaction (inbox and push).
    func request(from: String, to: String, matchID: String, now: Int64) async throws -> SlpRequestOutcome
    /// Accepts `other`'s pending request (`noRequest` without one) as `matchID`.
    func accept(userID: String, other: String, matchID: String, now: Int64) async throws -> SlpAcceptOutcome
    /// Ends the member's active match with `other`, raising the member's dodge count: the new count, or
    /// nil when `other` is not the current partner (nothing changes).
    func endMatch(userID: String, other: String, now: Int64) async throws -> Int?
    /// Stores one side's rating and adds its flags to the partner's counters; the first rating of an
    /// active match ends it for both without a penalty (answered true).
    func rate(_ rating: SlpRatingRecord) async throws -> Bool
    /// A match's members and whether it is active; nil for no such match.
    func match(id: String) async throws -> (members: (String, String), active: Bool)?
    /// Whether `other` is or was a partner of `userID`.
    func isPartner(_ other: String, of userID: String) async throws -> Bool
    /// Takes out of the queue every member who entered (or last re-entered) before `enteredBefore`, with
    /// their positions and requests (a position is personal data kept only while the search needs it);
    /// answers how many.
    func pruneQueue(enteredBefore: Int64) async throws -> Int
}
