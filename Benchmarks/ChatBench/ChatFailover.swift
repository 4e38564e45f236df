import BenchSupport
import Foundation
import Histogram
import RPCCore
import Synchronization
import YediProto

/// `--failover`: a ChatService replica's death under load, as issue 31 asks it measured.
///
/// Every stream and every sender uses clients spread over all replicas (the client's own balancing,
/// ejection and health watch). Senders send for a phase, replica 0 gets SIGKILL, they go on for a phase
/// with it dead, it is restarted on its port and they go on for a last phase. A failed send is sent again
/// with the same client message id (the original is answered if it had been stored), as an app does; a
/// stream that ends is subscribed again from its last position, anywhere. Then every room's history is
/// read back.
///
/// The `failover` line: time from the kill to each sender's first acknowledged send (p50/max: with the
/// client's balancing most senders never notice), and for the senders whose send failed while the replica
/// was down, the time from that failure to their next success; calls failed; acknowledged sends missing
/// from the history (lost) and from the room's stream (missed), duplicates and out-of-order deliveries;
/// the cut streams' time from the kill to caught up elsewhere; the restart's time to SERVING and the CPU
/// it used once serving (it takes traffic again); the CPU of the services, PostgreSQL and the bench over the run.
extension ChatBench {
    func measureFailover(
        processes: ProcessList, restart: (Int) async throws -> ServiceProcess,
        streamClients: [RPCClient], senderClient: RPCClient,
        pairs: [(customer: String, designer: String, designerID: String)], rooms: [String]
    ) async throws {
        let (streams, senders, callsPerConnection) = (self.streams, self.senders, self.callsPerConnection)
        let ledger = FailoverLedger(rooms: streams, senders: senders)

        var readers: [Task<Void, Never>] = []
        for index in 0..<streams {
            let client = YediChat.ChatService.Client(streamClients[index / callsPerConnection])
            let token = pairs[index].designer
            readers.append(Task { await Self.follow(index, client: client, token: token, ledger: ledger) })
        }
        while ledger.caughtUpStreams < streams {
            try await Task.sleep(for: .milliseconds(50))
        }

        let chat = YediChat.ChatService.Client(senderClient)
        let run = try await FailoverRun.measure(
            processes: processes, restart: restart, phase: failoverOptions.phase, workers: ledger.senders
        ) {
            await withTaskGroup(of: Void.self) { group in
                for sender in 0..<senders {
                    group.addTask {
                        await Self.send(as: sender, chat: chat, pairs: pairs, rooms: rooms, ledger: ledger)
                    }
                }
            }
        }

        // Every acknowledged send delivered to its room's stream, or 30 s.
        let deadline = ContinuousClock.now + .seconds(30)
        while ledger.undelivered > 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        for reader in readers { reader.cancel() }
        for reader in readers { await reader.value }
        let lost = try await Self.missingFromHistory(ledger: ledger, chat: chat, pairs: pairs, rooms: rooms)

        let figures = ledger.outcome
        print(
            #"{"bench":"failover",\#(engineFields)"service":"ChatService","killed":"replica 0","#
                + #""phase_s":\#(failoverOptions.failoverPhaseSeconds),"streams":\#(streams),"senders":\#(senders),"#
                + ledger.senders.fields(noun: "senders")
                + #""acknowledged":\#(figures.acknowledged),"acknowledged_lost":\#(lost),"#
                + #""events_missed":\#(figures.missed),"duplicates":\#(figures.duplicates),"#
                + #""out_of_order":\#(figures.outOfOrder),"streams_cut":\#(figures.cut.totalCount),"#
                + #""stream_ends_after_kill":\#(figures.resubscriptions),"#
                + #""streams_not_resumed":\#(figures.notResumed),"#
                + #""stream_cut_seen_ms":\#(Figures.medianAndMax(figures.cut)),"#
                + #""stream_resume_ms":\#(Figures.medianAndMax(figures.resume)),"#
                + run.fields + #""sends_per_second":\#(run.rate(figures.acknowledged)),"tls":true}"#
        )
    }

    /// One designer's stream, subscribed again from its last position whenever it ends, until cancelled.
    private static func follow(
        _ index: Int, client: YediChat.ChatService.Client, token: String, ledger: FailoverLedger
    ) async {
        var last: Int64 = 0
        while !Task.isCancelled {
            do {
                try await client.subscribe(
                    .init(afterPosition: last), options: bearer(token, timeout: .seconds(3_600))
                ) { stream in
                    for try await event in stream {
                        last = max(last, event.position)
                        switch event.event {
                        case .caughtUp?: ledger.caughtUp(index)
                        case .messageAdded(let added)?: ledger.delivered(index, seq: added.message?.seq ?? 0)
                        default: continue
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
            }
            ledger.ended(index)
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// One sender: a random room, a new client message id per message, each sent until acknowledged (or
    /// the run ends).
    private static func send(
        as sender: Int, chat: YediChat.ChatService.Client,
        pairs: [(customer: String, designer: String, designerID: String)], rooms: [String],
        ledger: FailoverLedger
    ) async {
        var random = SplitMix64(seed: UInt64(sender + 1))
        var number = 0
        while !ledger.senders.isStopped {
            let index = Int(random.next() % UInt64(rooms.count))
            let id = "f\(sender)-\(number)"
            number += 1
            while !ledger.senders.isStopped {
                do {
                    let message = try await chat.sendMessage(
                        .init(roomID: rooms[index], body: .text(.init(text: id)), clientMessageID: id),
                        options: bearer(pairs[index].customer, timeout: .seconds(10)))
                    ledger.acknowledged(index, seq: message.seq, by: sender)
                    break
                } catch {
                    ledger.senders.failed(sender, error)
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }
        }
    }

    /// Acknowledged sends that the rooms' histories do not hold, read back oldest first 100 at a time.
    private static func missingFromHistory(
        ledger: FailoverLedger, chat: YediChat.ChatService.Client,
        pairs: [(customer: String, designer: String, designerID: String)], rooms: [String]
    ) async throws -> Int {
        var missing = 0
        for (index, acknowledged) in ledger.acknowledgedByRoom where !acknowledged.isEmpty {
            var stored = Set<Int64>()
            var after: Int64 = 0
            while true {
                let page = try await chat.listMessages(
                    .init(roomID: rooms[index], limit: 100, afterSeq: after), options: bearer(pairs[index].customer))
                guard let last = page.messages.last?.seq else { break }
                stored.formUnion(page.messages.map(\.seq))
                after = last
            }
            missing += acknowledged.subtracting(stored).count
        }
        return missing
    }
}

/// What the failover run saw, from many tasks: per room the acknowledged and the delivered seqs, per
/// stream its cuts and resumptions; the senders' own outcomes are `senders`'.
final class FailoverLedger: Sendable {
    let senders: FailoverWorkers

    private struct State {
        var acknowledged: [Set<Int64>]
        var delivered: [[Int64]]
        var caughtUp: [Bool]
        /// Per stream cut after the kill: when it caught up again.
        var cutAt: [ContinuousClock.Instant?]
        var resumedAt: [ContinuousClock.Instant?]
        var endsAfterKill = 0
    }

    private let state: Mutex<State>

    init(rooms: Int, senders: Int) {
        self.senders = FailoverWorkers(count: senders)
        state = Mutex(
            State(
                acknowledged: Array(repeating: [], count: rooms), delivered: Array(repeating: [], count: rooms),
                caughtUp: Array(repeating: false, count: rooms), cutAt: Array(repeating: nil, count: rooms),
                resumedAt: Array(repeating: nil, count: rooms)))
    }

    func caughtUp(_ stream: Int) {
        state.withLock {
            $0.caughtUp[stream] = true
            if $0.cutAt[stream] != nil, $0.resumedAt[stream] == nil { $0.resumedAt[stream] = .now }
        }
    }

    func ended(_ stream: Int) {
        guard senders.killedAt != nil else { return }
        state.withLock {
            $0.endsAfterKill += 1
            if $0.cutAt[stream] == nil { $0.cutAt[stream] = .now }
        }
    }

    func delivered(_ stream: Int, seq: Int64) { state.withLock { $0.delivered[stream].append(seq) } }

    func acknowledged(_ room: Int, seq: Int64, by sender: Int) {
        state.withLock { _ = $0.acknowledged[room].insert(seq) }
        senders.succeeded(sender)
    }

    var caughtUpStreams: Int { state.withLock { $0.caughtUp.count(where: { $0 }) } }

    /// Acknowledged sends not yet delivered to their room's stream.
    var undelivered: Int {
        state.withLock { state in
            zip(state.acknowledged, state.delivered).reduce(0) { $0 + $1.0.subtracting($1.1).count }
        }
    }

    var acknowledgedByRoom: [(Int, Set<Int64>)] { state.withLock { Array($0.acknowledged.enumerated()) } }

    struct Outcome {
        var cut: Histogram<UInt64>
        var resume: Histogram<UInt64>
        var notResumed: Int
        var resubscriptions: Int
        var acknowledged: Int
        var missed: Int
        var duplicates: Int
        var outOfOrder: Int
    }

    var outcome: Outcome {
        let killedAt = senders.killedAt ?? .now
        return state.withLock { state in
            func since(_ instants: [ContinuousClock.Instant?]) -> Histogram<UInt64> {
                var histogram = Figures.newHistogram()
                for case let instant? in instants {
                    histogram.record(Figures.nanoseconds(instant - killedAt))
                }
                return histogram
            }
            var (missed, duplicates, outOfOrder) = (0, 0, 0)
            for (acknowledged, delivered) in zip(state.acknowledged, state.delivered) {
                let distinct = Set(delivered)
                missed += acknowledged.subtracting(distinct).count
                duplicates += delivered.count - distinct.count
                outOfOrder += zip(delivered, delivered.dropFirst()).count(where: { $0.1 < $0.0 })
            }
            return Outcome(
                cut: since(state.cutAt), resume: since(state.resumedAt),
                notResumed: zip(state.cutAt, state.resumedAt).count(where: { $0.0 != nil && $0.1 == nil }),
                resubscriptions: state.endsAfterKill,
                acknowledged: state.acknowledged.reduce(0) { $0 + $1.count }, missed: missed, duplicates: duplicates,
                outOfOrder: outOfOrder)
        }
    }
}
