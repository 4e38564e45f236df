import Foundation
import GRDB
import RPCAccess
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// Matching under load over TLS: 200 queued members fire requests and accepts in a shuffled order, 64
/// calls at a time, with three-member cycles (A accepts B, B accepts C, C accepts A at once). Afterwards
/// the pairing invariant holds: every matched member has exactly one partner who names them back, no
/// matched member is queued, and every MATCHED answer is the match both members are in.
final class SlpMatchingRaceTests: SlpTestCase {

    /// One call of the race: who calls, on whom, and whether it is a request or an accept.
    private struct Move: Sendable {
        var caller: Int
        var other: Int
        var accept: Bool
    }

    private struct Outcome: Sendable {
        var move: Move
        var matchID: String?
    }

    func testSlpTwoHundredMembersRequestingAndAcceptingAtRandomStayPairedOneToOne() async throws {
        let count = 200
        var generator = SeededGenerator(seed: 28)
        var members: [CallOptions] = []
        for index in 0..<count {
            let options = try await fixture.member("m\(index)", app: "slp", nickname: "닉m\(index)")
            _ = try await matching.createProfile(
                .init(birthDate: .init(year: 1998, month: 3, day: 4), gender: .female, email: "m\(index)@example.com"),
                options: options)
            let point = SlpStoreContract.north(of: SlpStoreContract.cityHall, metres: Double(index))
            let entered = try await matching.enterQueue(
                .init(latitude: point.latitude, longitude: point.longitude), options: options)
            XCTAssertEqual(entered.outcome, .entered)
            members.append(options)
        }
        // Requests first (each to three others), then cycles of three: each requested the one after it.
        var requests: [Move] = []
        for caller in 0..<150 {
            for _ in 0..<3 {
                let other = Int.random(in: 0..<count, using: &generator)
                if other != caller { requests.append(Move(caller: caller, other: other, accept: false)) }
            }
        }
        let accepts: [Move] = requests.map { Move(caller: $0.other, other: $0.caller, accept: true) }
        var cycleAccepts: [Move] = []
        for first in stride(from: 150, to: 198, by: 3) {
            let cycle = [first, first + 1, first + 2]
            for (index, member) in cycle.enumerated() {
                let next = cycle[(index + 1) % 3]
                requests.append(Move(caller: next, other: member, accept: false))
                cycleAccepts.append(Move(caller: member, other: next, accept: true))
            }
        }
        let requestOutcomes = try await run(requests.shuffled(using: &generator), members: members)
        // The 16 cycles' 48 accepts all at once, then the rest shuffled.
        let cycleOutcomes = try await run(cycleAccepts, members: members)
        XCTAssertEqual(cycleOutcomes.filter { $0.matchID != nil }.count, 16, "one match per cycle")
        let acceptOutcomes = try await run(accepts.shuffled(using: &generator), members: members)

        let active = try await fixture.service.environment.database.read { db in
            try Row.fetchAll(db, sql: "SELECT match_id, user_id, partner_id FROM slp_match_member WHERE active = 1")
                .map {
                    (
                        match: $0["match_id"] as String, user: $0["user_id"] as String,
                        partner: $0["partner_id"] as String
                    )
                }
        }
        let queued = try await fixture.service.environment.database.read { db in
            Set(try String.fetchAll(db, sql: "SELECT user_id FROM slp_queue"))
        }
        XCTAssertGreaterThan(active.count, 20, "the race matched members")
        var partnerOf: [String: String] = [:]
        var matchOf: [String: String] = [:]
        for row in active {
            XCTAssertNil(partnerOf[row.user], "\(row.user) is in two active matches")
            partnerOf[row.user] = row.partner
            matchOf[row.user] = row.match
            XCTAssertFalse(queued.contains(row.user), "\(row.user) is matched and queued")
        }
        for (user, partner) in partnerOf {
            XCTAssertEqual(partnerOf[partner], user, "\(user)'s partner \(partner) does not name them back")
            XCTAssertEqual(matchOf[partner], matchOf[user])
        }
        for outcome in requestOutcomes + cycleOutcomes + acceptOutcomes {
            guard let matchID = outcome.matchID else { continue }
            let caller = "m\(outcome.move.caller)"
            let other = "m\(outcome.move.other)"
            XCTAssertEqual(matchOf[caller], matchID, "\(caller)'s MATCHED answer is not their match")
            XCTAssertEqual(partnerOf[caller], other)
        }
        for (index, options) in members.enumerated() {
            let state = try await matching.getState(.init(), options: options)
            XCTAssertEqual(state.partnerID, partnerOf["m\(index)"] ?? "", "m\(index)'s state")
        }
    }

    /// Runs the moves 64 at a time; a MATCHED answer carries its match id.
    private func run(_ moves: [Move], members: [CallOptions]) async throws -> [Outcome] {
        let client = matching
        return try await withThrowingTaskGroup(of: Outcome.self) { group in
            var outcomes: [Outcome] = []
            var next = 0
            func add() {
                guard next < moves.count else { return }
                let move = moves[next]
                let options = members[move.caller]
                next += 1
                group.addTask {
                    let request = YediSlp.OtherRequest(otherID: "m\(move.other)")
                    do {
                        if move.accept {
                            let answer = try await client.accept(request, options: options)
                            return Outcome(move: move, matchID: answer.outcome == .matched ? answer.matchID : nil)
                        }
                        let answer = try await client.request(request, options: options)
                        return Outcome(move: move, matchID: answer.outcome == .matched ? answer.matchID : nil)
                    } catch let error as RPCError where error.code == .failedPrecondition {
                        // No pending request any more, or the caller left the queue by being matched.
                        return Outcome(move: move, matchID: nil)
                    }
                }
            }
            for _ in 0..<64 { add() }
            while let outcome = try await group.next() {
                outcomes.append(outcome)
                add()
            }
            return outcomes
        }
    }
}
