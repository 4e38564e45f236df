import RPCCore
import ServiceRuntime
import YediProto

/// How the BookingService process hosts Zipadoo's promises (docs/zipadoo.md): its settlement jobs run on
/// the process's durable scheduler, and participants are checked with AccountService's `CheckFriends`.
extension BookingServiceDefinition {
    /// Streams of one promise at once: 21 participants with a few devices each.
    static let promiseStreamsPerPromise = 64

    static func promises(_ env: ServiceEnvironment, kit: HandlerKit) -> PromiseHandlers {
        let hub = PromiseEventHub(name: "zipadoo_promise", maxPerKey: promiseStreamsPerPromise)
        env.addDrainingService(StreamHubShutdown(hub: hub))
        let sink: PromiseEventSink = { hub.publish($0) }
        let store = SQLitePromiseStore(database: env.database, scheduler: env.scheduler, sink: sink)
        let clock = env.clock
        let scheduler = env.scheduler
        env.scheduler.handle(SQLitePromiseStore.settlementKind) { job, db in
            _ = try SQLitePromiseStore.settle(
                job.subject ?? "", now: clock.nowMilliseconds, scheduler: scheduler, sink: sink, db)
        }
        let outbox = env.outbox
        env.scheduler.handle(PromiseReminder.kind) { job, db in try PromiseReminder.run(job, outbox: outbox, db) }
        let peers = env.peers
        return PromiseHandlers(
            store: store, kit: kit,
            stream: ResumableStream(
                hub: hub, log: PromiseEventLog(database: env.database),
                restart: "watch again with after_position 0 for a new snapshot"),
            friendsOf: { userID, candidates in
                do {
                    let friends = YediZipadoo.Friends.Client(try peers.client(for: "account"))
                    return try await friends.checkFriends(
                        .init(userID: userID, candidateIDs: candidates), options: CallOptions(timeout: .seconds(2))
                    ).friendIDs
                } catch let error as RPCError where error.code != .unavailable {
                    throw RPCError(code: .unavailable, message: "friends cannot be checked now: \(error.message)")
                }
            })
    }
}
