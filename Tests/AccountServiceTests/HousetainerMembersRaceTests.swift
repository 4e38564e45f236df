import Foundation
import RPCCore
import XCTest
import YediProto

@testable import AccountService

/// Housetainer's rules under concurrent calls over TLS: the quota, one code, one nickname.
final class HousetainerMembersRaceTests: HousetainerTestCase {
    /// The status of each of `count` concurrent calls of `call(index)`.
    private func statuses(_ count: Int, _ call: @escaping @Sendable (Int) async throws -> Void) async -> [StatusCode] {
        await withTaskGroup(of: StatusCode.self) { group in
            for index in 0..<count {
                group.addTask {
                    do {
                        try await call(index)
                        return .ok
                    } catch let error as RPCError {
                        return error.code
                    } catch {
                        return .unknown
                    }
                }
            }
            return await group.reduce(into: [StatusCode]()) { $0.append($1) }
        }
    }

    func testHousetainerTwentyConcurrentInvitationsFromOneMemberMakeExactlyThree() async throws {
        let host = try await founder("host", nickname: "호스트")
        let members = self.members
        let codes = await statuses(20) { index in
            _ = try await members.createInvitation(
                .init(inviteeEmail: "guest\(index)@example.com", inviteeName: "손님"), options: host)
        }
        XCTAssertEqual(codes.filter { $0 == .ok }.count, 3)
        XCTAssertEqual(codes.filter { $0 == .resourceExhausted }.count, 17)
        let mine = try await members.listMyInvitations(.init(), options: host)
        XCTAssertEqual(mine.invitations.count, 3)
    }

    func testHousetainerTenConcurrentSignUpsWithOneCodeMakeOneMemberAndTheCodeJoined() async throws {
        let host = try await founder("host", nickname: "호스트")
        let code = try await invite("minji@example.kr", by: host)
        var tickets: [String] = []
        for _ in 0..<10 { tickets.append(try await ticket("minji", email: "minji@example.kr")) }
        let members = self.members
        let nicknames = ["가", "나", "다", "라", "마", "바", "사", "아", "자", "차"]
        let signUps = tickets
        let codes = await statuses(10) { index in
            _ = try await members.signUp(
                .init(ticket: signUps[index], code: code, nickname: nicknames[index], acceptedTerms: Self.terms),
                options: Self.anonymous)
        }
        XCTAssertEqual(codes.filter { $0 == .ok }.count, 1, "\(codes)")
        XCTAssertTrue(codes.allSatisfy { [.ok, .alreadyExists, .failedPrecondition].contains($0) }, "\(codes)")
        let invitations = try await members.listMyInvitations(.init(), options: host).invitations
        XCTAssertEqual(invitations.map(\.status), [.joined])
        let page = try await members.getMember(.init(memberID: "host"), options: host)
        XCTAssertEqual(page.buddies.count, 1)
    }

    func testHousetainerTwoConcurrentSignUpsWithOneNicknameMakeOne() async throws {
        let host = try await founder("host", nickname: "호스트")
        let first = (try await invite("a@example.kr", by: host), try await ticket("a", email: "a@example.kr"))
        let second = (try await invite("b@example.kr", by: host), try await ticket("b", email: "b@example.kr"))
        let members = self.members
        let pairs = [first, second]
        let codes = await statuses(2) { index in
            _ = try await members.signUp(
                .init(ticket: pairs[index].1, code: pairs[index].0, nickname: "같은이름", acceptedTerms: Self.terms),
                options: Self.anonymous)
        }
        XCTAssertEqual(codes.sorted { $0.rawValue < $1.rawValue }, [.ok, .alreadyExists])
        // The loser's code is still S: it may sign up under another nickname.
        let statuses = try await members.listMyInvitations(.init(), options: host).invitations.map(\.status)
        XCTAssertEqual(statuses.filter { $0 == .sent }.count, 1)
    }
}
