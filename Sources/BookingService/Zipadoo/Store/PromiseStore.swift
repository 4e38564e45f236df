import ServiceRuntime

struct PlaceRecord: Sendable, Hashable {
    var name: String
    var address: String
    var latitude: Double
    var longitude: Double
}

/// A participant's result once settled (the proto's `ArrivalResult` numbers).
enum ArrivalOutcome: Int, Sendable {
    case unsettled = 0
    case onTime = 1
    case late = 2
    case neverArrived = 3
}

struct ParticipantRecord: Sendable, Hashable {
    var userID: String
    var latitude: Double?
    var longitude: Double?
    var fixedAtMilliseconds: Int64?
    var arrivedAtMilliseconds: Int64?
    var rank: Int?
    var result: ArrivalOutcome = .unsettled
    var potatoes: Int64 = 0
}

struct PromiseRecord: Sendable, Hashable {
    var id: String
    var creatorID: String
    var clientID: String
    var title: String
    var atMilliseconds: Int64
    var place: PlaceRecord
    var fee: Int
    var createdAtMilliseconds: Int64
    var settledAtMilliseconds: Int64?
    /// The creator first, then in the order added.
    var participants: [ParticipantRecord] = []
}

/// What an edit replaces (the creator's, before T − 30 min).
struct PromiseEdit: Sendable, Hashable {
    var title: String
    var atMilliseconds: Int64
    var place: PlaceRecord
    var fee: Int
    /// Besides the creator.
    var participantIDs: [String]
}

struct FixOutcome: Sendable, Hashable {
    var arrivedAtMilliseconds: Int64?
    var rank: Int?
    var fee: Int
    var atMilliseconds: Int64
    var metres: Double
}

struct MemberStatsRecord: Sendable, Hashable {
    var userID: String
    var completed: Int64
    var late: Int64
}

struct PromiseResultRecord: Sendable, Hashable {
    var promiseID: String
    var title: String
    var atMilliseconds: Int64
    var rank: Int?
    var result: ArrivalOutcome
    var potatoes: Int64
}

enum PromiseStoreError: Error, Equatable {
    /// Not a participant's (or no such promise): nothing leaks.
    case notFound
    /// Only the creator edits or deletes.
    case notCreator
    /// The creator deletes rather than leaves.
    case creatorCannotLeave
    /// Changes end at T − 30 min.
    case tooLateToChange
    /// Positions only in [T − 30 min, T + 3 h).
    case outsideWindow
    /// At most one fix a second.
    case tooSoon
}

/// Where BookingService keeps Zipadoo's promises, positions, settlements and potato ledger
/// (docs/zipadoo.md). Every change decides inside one write transaction; settlement runs at most once per
/// promise whoever asks first (the scheduler's job or a read), by a conditional update on `settled_at_ms`.
protocol PromiseStore: Sendable {
    /// Stores the promise with its participants (the creator first) and its settlement job; a retry with
    /// the same (creator, client id) answers the stored promise.
    func create(_ promise: PromiseRecord, participantIDs: [String]) async throws -> PromiseRecord
    /// The promise if `userID` takes part (`notFound` otherwise); a due promise is settled first.
    func promise(id: String, for userID: String, now: Int64) async throws -> PromiseRecord
    func update(id: String, by userID: String, _ edit: PromiseEdit, now: Int64) async throws -> PromiseRecord
    func delete(id: String, by userID: String, now: Int64) async throws
    func leave(id: String, userID: String, now: Int64) async throws
    /// The member's promises of a window: upcoming and tracking soonest first, past latest first (after
    /// `after`, at most `limit`, within the latest 50). Due promises are settled first.
    func promises(
        of userID: String, window: PromiseWindowFilter, after: (at: Int64, id: String)?, limit: Int, now: Int64
    ) async throws -> [PromiseRecord]
    /// Keeps the fix; an arrival (≤ 30 m) gets the server's time and the next rank, in this transaction.
    func report(promiseID: String, userID: String, at point: GeoPoint, now: Int64) async throws -> FixOutcome
    /// Every participant's latest fix and arrival (participants only, in the window).
    func positions(promiseID: String, userID: String, now: Int64) async throws -> [ParticipantRecord]
    /// Settles every promise due at `now` that `userID` takes part in; answers how many.
    func settleDue(of userID: String, now: Int64) async throws -> Int
    /// Settles one promise if due and not settled yet: true for the run that settled it.
    func settle(promiseID: String, now: Int64) async throws -> Bool
    /// Every participant's latest fix and the highest event position of the promise, read together
    /// (participants, from T − 30 min).
    func snapshot(promiseID: String, userID: String, now: Int64) async throws -> ([ParticipantRecord], Int64)
    func stats(of userIDs: [String]) async throws -> [MemberStatsRecord]
    func balance(of userID: String) async throws -> Int64
    /// The member's settled promises, latest first, at most `limit`.
    func results(of userID: String, limit: Int) async throws -> [PromiseResultRecord]
}

enum PromiseWindowFilter: Sendable {
    case upcoming, tracking, past
}

/// The settlement job both engines' stores write with each promise, due at T + 3 h, moved by an edit and
/// dropped with the promise; whoever settles first (the job or a read) wins.
enum PromiseSettlement {
    static let kind = "zipadoo-promise-settlement"
    static func jobID(_ promiseID: String) -> String { "promise-settlement:\(promiseID)" }

    static func job(promiseID: String, at: Int64) -> ScheduledJob {
        ScheduledJob(
            id: jobID(promiseID), kind: kind, subject: promiseID, dueAtMilliseconds: at + PromiseRules.closesAfter)
    }
}
