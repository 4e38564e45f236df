import Foundation
import RPCCore
import XCTest
import YediProto

@testable import AccountService

/// Housetainer's rules under concurrent calls over TLS: the quota, one code, one nickname.
final class HousetainerMembersRaceTests: HousetainerTestCase {
    func testHousetainerTwentyConcurrentInvitationsFromOneMemberMakeExactlyThree() async throws {
        let host = try await founder("host", nickname: "호스트")
        let members = self.members
        let codes = await withTaskGroup(of: StatusCode.self) { group in
            for index in 0..<20 {
                group.addTask {
                    do {
                        _ = try await members.createInvitation(
                            .init(inviteeEmail: "guest\(index)@example.com", inviteeName: "손님"), options: host)
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
        let codes = await withTaskGroup(of: StatusCode.self) { group in
            for (index, ticket) in tickets.enumerated() {
                group.addTask {
                    do {
                        _ = try await members.signUp(
                            .init(ticket: ticket, code: code, nickname: nicknames[index], acceptedTerms: Self.terms),
                            options: Self.anonymous)
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
        XCTAssertEqual(codes.filter { $0 == .ok }.count, 1, "\(codes)")
        XCTAssertTrue(codes.allSatisfy { [.ok, .alreadyExists, .failedPrecondition].contains($0) }, "\(codes)")
        let invitations = try await members.listMyInvitations(.init(), options: host).invitations
        XCTAssertEqual(invitations.map(\.status), [.joined])
        let found1 = try await members.getMember(.init(memberID: "host"), options: host).buddies.count
        XCTAssertEqual(found1, 1)
    }

    func testHousetainerTwoConcurrentSignUpsWithOneNicknameMakeOne() async throws {
        let host = try await founder("host", nickname: "호스트")
        let first = (try await invite("a@example.kr", by: host), try await ticket("a", email: "a@example.kr"))
        let second = (try await invite("b@example.kr", by: host), try await ticket("b", email: "b@example.kr"))
        let members = self.members
        let codes = await withTaskGroup(of: StatusCode.self) { group in
            for (code, ticket) in [first, second] {
                group.addTask {
                    do {
                        _ = try await members.signUp(
                            .init(ticket: ticket, code: code, nickname: "같은이름", acceptedTerms: Self.terms),
                            options: Self.anonymous)
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
        XCTAssertEqual(codes.sorted { $0.rawValue < $1.rawValue }, [.ok, .alreadyExists])
        // The loser's code is still S: it may sign up under another nickname.
        let statuses = try await members.listMyInvitations(.init(), options: host).invitations.map(\.status)
        XCTAssertEqual(statuses.filter { $0 == .sent }.count, 1)
    }
}
