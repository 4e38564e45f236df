import Foundation
import GRDB
import ServiceRuntime
import YediProto

/// Zipadoo's reminder when tracking opens (T − 30 min): "{title} 30분 전입니다" to every participant, an
/// inbox row and a push through AccountService's `Notify` on the outbox. A scheduler job written with the
/// promise, moved by an edit, dropped by deletion; when it runs it still checks its promise (a job says
/// "look at this now"): gone, or no longer due at this instant, is not reminded of.
enum PromiseReminder {
    static let kind = "zipadoo-promise-reminder"

    static func jobID(_ promiseID: String) -> String { "promise-reminder:\(promiseID)" }

    static func job(promiseID: String, at: Int64) -> ScheduledJob {
        ScheduledJob(
            id: jobID(promiseID), kind: kind, subject: promiseID, dueAtMilliseconds: at - PromiseRules.opensBefore)
    }

    /// Runs a due reminder inside the scheduler's transaction; answers how many notifications were queued.
    @discardableResult
    static func run(_ job: ScheduledJob, outbox: Outbox, _ db: Database) throws -> Int {
        guard let id = job.subject, let promise = try SQLitePromiseStore.load(id, db),
            promise.atMilliseconds - PromiseRules.opensBefore == job.dueAtMilliseconds
        else { return 0 }
        for participant in promise.participants {
            try outbox.enqueue(
                in: db, peer: "account", method: YediAccount.Notifications.Method.notify,
                request: notification(promise, to: participant.userID))
        }
        return promise.participants.count
    }

    /// The reminder one participant gets (both engines).
    static func notification(_ promise: PromiseRecord, to userID: String) -> YediAccount.NotifyRequest {
        YediAccount.NotifyRequest(
            userID: userID, app: "zipadoo", kind: kind, title: "\(promise.title) 30분 전입니다",
            body: "\(promise.place.name)에서 만나요. 지금부터 위치가 공유됩니다.",
            data: [.init(key: "promise_id", value: promise.id)])
    }
}
