import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// `yedi.zipadoo.Promises`: Zipadoo's promises, time windows, positions and arrivals, settlement and
/// stats (docs/zipadoo.md). The proto admits Zipadoo members only; the store decides inside its
/// transactions, and reads of a due promise settle it first.
struct PromiseHandlers: YediZipadoo.Promises.ServiceProtocol, HandlerKitUser {
    let store: any PromiseStore
    let kit: HandlerKit
    /// WatchPromise: the promise's stored events after a position, then live ones from the hub.
    let stream: ResumableStream<PromiseEventRecord>
    /// Which of the candidates are the user's friends (AccountService's `Friends/CheckFriends`); throws
    /// `UNAVAILABLE` when AccountService cannot answer.
    let friendsOf: @Sendable (_ userID: String, _ candidates: [String]) async throws -> [String]

    var pastPages: PageList {
        kit.pageList("promises-past", defaultLimit: PromiseRules.pastPageSize, maximumLimit: PromiseRules.pastPageSize)
    }

    func createPromise(_ request: YediZipadoo.CreatePromiseRequest, context: ServerContext) async throws
        -> YediZipadoo.Promise
    {
        let user = try context.requireUser()
        let clientID = try PromiseRules.clientID(request.clientID)
        let title = try PromiseRules.title(request.title)
        let place = try PromiseRules.place(request.place)
        let fee = try PromiseRules.fee(request.fee)
        let participants = try PromiseRules.participants(request.participantIDs, creator: user.id)
        let now = clock.nowMilliseconds
        let at = try PromiseRules.time(request.atMs, now: now)
        try await requireFriends(participants, of: user.id)
        let record = PromiseRecord(
            id: ids.next(), creatorID: user.id, clientID: clientID, title: title, atMilliseconds: at, place: place,
            fee: fee, createdAtMilliseconds: now)
        let stored = try await mapped { try await store.create(record, participantIDs: participants) }
        return Self.message(stored, now: now)
    }

    func updatePromise(_ request: YediZipadoo.UpdatePromiseRequest, context: ServerContext) async throws
        -> YediZipadoo.Promise
    {
        let user = try context.requireUser()
        let id = try FieldRule.id(request.promiseID, field: "promise_id")
        let now = clock.nowMilliseconds
        // Who may change it first (NOT_FOUND for strangers, PERMISSION_DENIED for participants), then the
        // fields, the new time and the new participants' friendship.
        let current = try await mapped { try await store.promise(id: id, for: user.id, now: now) }
        guard current.creatorID == user.id else { throw Self.refusal(.notCreator) }
        guard now < current.atMilliseconds - PromiseRules.opensBefore else { throw Self.refusal(.tooLateToChange) }
        let edit = PromiseEdit(
            title: try PromiseRules.title(request.title), atMilliseconds: request.atMs,
            place: try PromiseRules.place(request.place), fee: try PromiseRules.fee(request.fee),
            participantIDs: try PromiseRules.participants(request.participantIDs, creator: user.id))
        _ = try PromiseRules.time(edit.atMilliseconds, now: now)
        let present = Set(current.participants.map(\.userID))
        try await requireFriends(edit.participantIDs.filter { !present.contains($0) }, of: user.id)
        let updated = try await mapped { try await store.update(id: id, by: user.id, edit, now: now) }
        return Self.message(updated, now: now)
    }

    func deletePromise(_ request: YediZipadoo.PromiseRequest, context: ServerContext) async throws
        -> YediZipadoo.DeletePromiseResponse
    {
        let user = try context.requireUser()
        let id = try FieldRule.id(request.promiseID, field: "promise_id")
        try await mapped { try await store.delete(id: id, by: user.id, now: clock.nowMilliseconds) }
        return YediZipadoo.DeletePromiseResponse()
    }

    func leavePromise(_ request: YediZipadoo.PromiseRequest, context: ServerContext) async throws
        -> YediZipadoo.LeavePromiseResponse
    {
        let user = try context.requireUser()
        let id = try FieldRule.id(request.promiseID, field: "promise_id")
        try await mapped { try await store.leave(id: id, userID: user.id, now: clock.nowMilliseconds) }
        return YediZipadoo.LeavePromiseResponse()
    }

    func getPromise(_ request: YediZipadoo.PromiseRequest, context: ServerContext) async throws -> YediZipadoo.Promise {
        let user = try context.requireUser()
        let id = try FieldRule.id(request.promiseID, field: "promise_id")
        let now = clock.nowMilliseconds
        return Self.message(try await mapped { try await store.promise(id: id, for: user.id, now: now) }, now: now)
    }

    func listPromises(_ request: YediZipadoo.ListPromisesRequest, context: ServerContext) async throws
        -> YediZipadoo.ListPromisesResponse
    {
        let user = try context.requireUser()
        let now = clock.nowMilliseconds
        switch request.window {
        case .upcoming, .tracking:
            let found = try await store.promises(
                of: user.id, window: request.window == .upcoming ? .upcoming : .tracking, after: nil,
                limit: PromiseRules.openListLimit, now: now)
            return YediZipadoo.ListPromisesResponse(
                promises: found.map { Self.message($0, now: now) }, page: YediCommon.PageInfo(nextCursor: ""))
        case .past:
            let (after, limit) = try pastPages.read(request.page, as: Int64.self)
            let found = try await store.promises(
                of: user.id, window: .past, after: after.map { ($0.key, $0.id) }, limit: limit + 1, now: now)
            return YediZipadoo.ListPromisesResponse(
                promises: found.prefix(limit).map { Self.message($0, now: now) },
                page: pastPages.next(found.map { PagePosition(key: $0.atMilliseconds, id: $0.id) }, limit: limit))
        default:
            throw FieldRule.invalid("window", "choose upcoming, tracking or past")
        }
    }

    func getNextPromise(_ request: YediZipadoo.GetNextPromiseRequest, context: ServerContext) async throws
        -> YediZipadoo.GetNextPromiseResponse
    {
        let user = try context.requireUser()
        let now = clock.nowMilliseconds
        let tracking = try await store.promises(of: user.id, window: .tracking, after: nil, limit: 1, now: now)
        var next = tracking.first
        if next == nil {
            next = try await store.promises(of: user.id, window: .upcoming, after: nil, limit: 1, now: now).first
        }
        guard let next else { return YediZipadoo.GetNextPromiseResponse(found: false) }
        return YediZipadoo.GetNextPromiseResponse(found: true, promise: Self.message(next, now: now))
    }

    func reportPosition(_ request: YediZipadoo.ReportPositionRequest, context: ServerContext) async throws
        -> YediZipadoo.ReportPositionResponse
    {
        let user = try context.requireUser()
        let id = try FieldRule.id(request.promiseID, field: "promise_id")
        let point = try PromiseRules.point(latitude: request.latitude, longitude: request.longitude)
        let fix = try await mapped {
            try await store.report(promiseID: id, userID: user.id, at: point, now: clock.nowMilliseconds)
        }
        guard let arrived = fix.arrivedAtMilliseconds else {
            return YediZipadoo.ReportPositionResponse(fee: Int32(fix.fee), distanceM: fix.metres)
        }
        // Whole seconds from T, rounded towards zero.
        return YediZipadoo.ReportPositionResponse(
            arrived: true, rank: Int32(fix.rank ?? 0), arrivedAtMs: arrived,
            secondsLate: (arrived - fix.atMilliseconds) / 1_000, fee: Int32(fix.fee), distanceM: fix.metres)
    }

    func listPositions(_ request: YediZipadoo.PromiseRequest, context: ServerContext) async throws
        -> YediZipadoo.ListPositionsResponse
    {
        let user = try context.requireUser()
        let id = try FieldRule.id(request.promiseID, field: "promise_id")
        let participants = try await mapped {
            try await store.positions(promiseID: id, userID: user.id, now: clock.nowMilliseconds)
        }
        return YediZipadoo.ListPositionsResponse(positions: participants.map(Self.position))
    }

    func watchPromise(
        _ request: YediZipadoo.WatchPromiseRequest, writer: RPCWriter<YediZipadoo.PromiseEvent>,
        context: ServerContext
    ) async throws {
        let user = try context.requireUser()
        let id = try FieldRule.id(request.promiseID, field: "promise_id")
        var after = request.afterPosition
        guard after >= 0 else { throw FieldRule.invalid("after_position", "cannot be negative") }
        if after == 0 {
            let (participants, position) = try await mapped {
                try await store.snapshot(promiseID: id, userID: user.id, now: clock.nowMilliseconds)
            }
            try await writer.write(
                YediZipadoo.PromiseEvent(
                    position: position, event: .snapshot(.init(positions: participants.map(Self.position)))))
            after = position
        } else {
            // Access only: the stored events say the rest.
            _ = try await mapped {
                try await store.snapshot(promiseID: id, userID: user.id, now: clock.nowMilliseconds)
            }
        }
        do {
            try await stream.run(
                key: id, after: after,
                write: { event in
                    try await writer.write(Self.event(event))
                    if event.kind == .trackingEnded { throw TrackingEndedMark() }
                },
                caughtUp: { try await writer.write(.init(position: $0, event: .caughtUp(.init()))) })
        } catch is TrackingEndedMark {
            return
        }
    }

    /// Thrown by the stream's writer after the last event, ending the call normally.
    private struct TrackingEndedMark: Error {}

    static func event(_ event: PromiseEventRecord) -> YediZipadoo.PromiseEvent {
        let position = YediZipadoo.Position(
            userID: event.userID ?? "", hasFix: event.latitude != nil, latitude: event.latitude ?? 0,
            longitude: event.longitude ?? 0, fixedAtMs: event.atMilliseconds,
            arrivedAtMs: event.kind == .arrived ? event.atMilliseconds : 0, rank: Int32(event.rank ?? 0))
        switch event.kind {
        case .moved: return .init(position: event.position, event: .moved(position))
        case .arrived: return .init(position: event.position, event: .arrived(position))
        case .trackingEnded: return .init(position: event.position, event: .trackingEnded(.init()))
        }
    }

    static func position(_ participant: ParticipantRecord) -> YediZipadoo.Position {
        YediZipadoo.Position(
            userID: participant.userID, hasFix: participant.fixedAtMilliseconds != nil,
            latitude: participant.latitude ?? 0, longitude: participant.longitude ?? 0,
            fixedAtMs: participant.fixedAtMilliseconds ?? 0, arrivedAtMs: participant.arrivedAtMilliseconds ?? 0,
            rank: Int32(participant.rank ?? 0))
    }

    func getStats(_ request: YediZipadoo.GetStatsRequest, context: ServerContext) async throws
        -> YediZipadoo.GetStatsResponse
    {
        let user = try context.requireUser()
        let asked = try FieldRule.batch(request.userIDs.isEmpty ? [user.id] : request.userIDs, field: "user_ids")
        let others = asked.filter { $0 != user.id }
        if !others.isEmpty {
            let friends = Set(try await friendsOf(user.id, others))
            if let stranger = others.first(where: { !friends.contains($0) }) {
                throw RPCError(code: .notFound, message: "user_ids: \(stranger) is not a friend of yours")
            }
        }
        let now = clock.nowMilliseconds
        if asked.contains(user.id) { _ = try await store.settleDue(of: user.id, now: now) }
        let stats = try await store.stats(of: asked)
        var answer: [YediZipadoo.Stats] = []
        for record in stats {
            let (depth, title) = PromiseRules.depth(completed: record.completed, late: record.late)
            var message = YediZipadoo.Stats(
                userID: record.userID, completed: record.completed, late: record.late,
                lateRate: record.completed == 0 ? 0 : Double(record.late) / Double(record.completed) * 100,
                depth: depth, title: title)
            if record.userID == user.id {
                message.balance = try await store.balance(of: user.id)
                message.results = try await store.results(of: user.id, limit: PromiseRules.pastKept).map {
                    YediZipadoo.PromiseResult(
                        promiseID: $0.promiseID, title: $0.title, atMs: $0.atMilliseconds, rank: Int32($0.rank ?? 0),
                        result: YediZipadoo.ArrivalResult(rawValue: Int32($0.result.rawValue)), potatoes: $0.potatoes)
                }
            }
            answer.append(message)
        }
        return YediZipadoo.GetStatsResponse(stats: answer)
    }

    // MARK: Helpers

    /// Every id must be the creator's friend (`FAILED_PRECONDITION` naming the first who is not).
    func requireFriends(_ ids: [String], of userID: String) async throws {
        guard !ids.isEmpty else { return }
        let friends = Set(try await friendsOf(userID, ids))
        if let stranger = ids.first(where: { !friends.contains($0) }) {
            throw RPCError(code: .failedPrecondition, message: "participant_ids: \(stranger) is not a friend of yours")
        }
    }

    func mapped<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PromiseStoreError {
            throw Self.refusal(error)
        }
    }

    static func refusal(_ error: PromiseStoreError) -> RPCError {
        switch error {
        case .notFound: RPCError(code: .notFound, message: "promise_id: no such promise of yours")
        case .notCreator: RPCError(code: .permissionDenied, message: "promise_id: only its creator changes a promise")
        case .creatorCannotLeave:
            RPCError(code: .failedPrecondition, message: "promise_id: the creator deletes the promise instead")
        case .tooLateToChange:
            RPCError(code: .failedPrecondition, message: "promise_id: changes end 30 minutes before the promise")
        case .outsideWindow:
            RPCError(
                code: .failedPrecondition,
                message: "promise_id: positions are shared from 30 minutes before to 3 hours after the promise")
        case .tooSoon:
            RPCError(
                code: .resourceExhausted, message: "at most one position a second", metadata: ["retry-after": "1"])
        }
    }

    static func message(_ promise: PromiseRecord, now: Int64) -> YediZipadoo.Promise {
        YediZipadoo.Promise(
            id: promise.id, creatorID: promise.creatorID, title: promise.title, atMs: promise.atMilliseconds,
            place: YediZipadoo.Place(
                name: promise.place.name, address: promise.place.address, latitude: promise.place.latitude,
                longitude: promise.place.longitude),
            fee: Int32(promise.fee),
            participants: promise.participants.map { participant in
                YediZipadoo.Participant(
                    userID: participant.userID, creator: participant.userID == promise.creatorID,
                    arrivedAtMs: participant.arrivedAtMilliseconds ?? 0, rank: Int32(participant.rank ?? 0),
                    result: YediZipadoo.ArrivalResult(rawValue: Int32(participant.result.rawValue)),
                    potatoes: participant.potatoes)
            },
            window: PromiseRules.window(at: promise.atMilliseconds, now: now),
            settledAtMs: promise.settledAtMilliseconds ?? 0)
    }
}
