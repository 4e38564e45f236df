import RPCAccess
import ServiceRuntime

/// Where AccountService keeps reports, inquiries, suspensions and the operator log. Handlers see only
/// this protocol; every method is scoped to one app, so nothing of another app is ever read or changed.
protocol ModerationStore: Sendable {
    /// Stores a report unless `report.writerID` already reported `report.reporteeID` in the app: then
    /// the earlier report's id and false, its reasons, title and comment replaced by these when
    /// `replacingEarlier` (SLP: "a second report replaces the first"; its time and any answer stay), else
    /// the earlier report kept as it was. `notFound` when the reportee is not a member of the app;
    /// `quotaExceeded` past `quota` reports and inquiries by the writer in the quota's day (a replacement
    /// adds no case, so it is not counted).
    func report(_ report: CaseRecord, quota: Quota?, replacingEarlier: Bool) async throws -> (id: String, counted: Bool)
    func submitInquiry(_ inquiry: CaseRecord, quota: Quota?) async throws
    /// Distinct members who reported `userID` in `app`: what an app's rules read ("3 reporters keep a
    /// member out of the queue").
    func reporterCount(of userID: String, app: AppID) async throws -> Int
    /// The writer's own cases, newest first.
    func cases(writerID: String, app: AppID, after: PagePosition<Int64>?, limit: Int) async throws -> [CaseRecord]
    /// The app's cases for its operators, newest first.
    func cases(_ filter: CaseFilter, app: AppID, after: PagePosition<Int64>?, limit: Int) async throws -> [CaseRecord]
    /// Answers a case of the app once and logs it: `alreadyAnswered` for an answered case (an answer is
    /// final: the member has read it), `notFound` for none.
    func answer(caseID: String, app: AppID, answer: String, by action: OperatorActionRecord) async throws
        -> CaseRecord
    /// Suspends a member of the app until `until`: ends their sessions, revokes their tokens here and in
    /// every service (the revocation list and the outbox, in this transaction), and logs it; `notFound`
    /// for a user of another app.
    func suspend(userID: String, app: AppID, until: Int64, by action: OperatorActionRecord) async throws
    /// Ends a suspension (sign-in works again) and logs it; `notFound` for a user of another app.
    func liftSuspension(userID: String, app: AppID, by action: OperatorActionRecord) async throws
    /// The app's operator log, newest first.
    func operatorActions(app: AppID, after: PagePosition<Int64>?, limit: Int) async throws -> [OperatorActionRecord]
    /// Logs an action another service took (its id makes a repeated delivery a no-op); answers whether it
    /// was new.
    func recordOperatorAction(_ action: OperatorActionRecord) async throws -> Bool
}

/// What the moderation store refuses beyond `AccountStoreError.notFound`.
enum ModerationStoreError: Error, Equatable {
    /// A case is answered once (issue 29: a second answer is `FAILED_PRECONDITION`).
    case alreadyAnswered
}
