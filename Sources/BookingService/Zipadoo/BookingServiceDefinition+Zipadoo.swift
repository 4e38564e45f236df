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
        let clock = env.clock
        let scheduler = env.scheduler
        let outbox = env.outbox
        let store: any PromiseStore
        let log: any StreamEventLog<PromiseEventRecord>
        var liveFromLog = false
        var streamReads: StreamReadLimit?
        switch env.engine {
        case .sqlite(let database):
            store = SQLitePromiseStore(database: database, scheduler: scheduler, sink: sink)
            log = PromiseEventLog(database: database)
            scheduler.handle(PromiseSettlement.kind) { job, db in
                _ = try SQLitePromiseStore.settle(
                    job.subject ?? "", now: clock.nowMilliseconds, scheduler: scheduler, sink: sink, db)
            }
            scheduler.handle(PromiseReminder.kind) { job, db in try PromiseReminder.run(job, outbox: outbox, db) }
        case .postgres(let postgres):
            store = PostgresPromiseStore(postgres: postgres, scheduler: scheduler, sink: sink)
            log = PostgresPromiseEventLog(postgres: postgres)
            // Fixes reported through another replica reach this one's watchers live.
            liveFromLog = true
            streamReads = postgres.streamReads
            env.addBackgroundService(
                hub.postgresListener(
                    postgres, channel: PostgresPromiseStore.channel, logger: env.logger,
                    wakeUp: { PromiseEventRecord.wakeUp($0, position: $1) },
                    ended: RPCError(code: .notFound, message: "the promise was deleted")))
            scheduler.handle(PromiseSettlement.kind) { job, tx in
                _ = try await PostgresPromiseStore.settle(
                    job.subject ?? "", now: clock.nowMilliseconds, scheduler: scheduler, sink: sink, tx)
            }
            scheduler.handle(PromiseReminder.kind) { job, tx in try await PromiseReminder.run(job, outbox: outbox, tx) }
        }
        let peers = env.peers
        return PromiseHandlers(
            store: store, kit: kit,
            stream: ResumableStream(
                hub: hub, log: log,
                restart: "watch again with after_position 0 for a new snapshot", liveFromLog: liveFromLog,
                reads: streamReads),
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
