import RPCCore
import ServiceRuntime
import YediProto

/// How the BookingService process hosts Zipadoo's promises (docs/zipadoo.md): its settlement jobs run on
/// the process's durable scheduler, and participants are checked with AccountService's `CheckFriends`.
extension BookingServiceDefinition {
    static func promises(_ env: ServiceEnvironment, kit: HandlerKit) -> PromiseHandlers {
        let store = SQLitePromiseStore(database: env.database, scheduler: env.scheduler)
        let clock = env.clock
        let scheduler = env.scheduler
        env.scheduler.handle(SQLitePromiseStore.settlementKind) { job, db in
            _ = try SQLitePromiseStore.settle(job.subject ?? "", now: clock.nowMilliseconds, scheduler: scheduler, db)
        }
        let peers = env.peers
        return PromiseHandlers(
            store: store, kit: kit,
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
