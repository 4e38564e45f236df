import Foundation
import GRDB
import RPCAccess
import RPCCore
import ServiceRuntime
import XCTest
import YediProto

@testable import AccountService

/// Every `Members` method, with an empty request, for every kind of caller of the real AccountService
/// (the repository's app files): a real status each time (never UNIMPLEMENTED, UNKNOWN or INTERNAL),
/// and other apps' callers and service certificates refused; then DeleteAccount of a Housetainer member.
final class HousetainerMembersAccessTests: HousetainerTestCase {
    func testHousetainerEveryMembersMethodAnswersARealStatusToEveryCaller() async throws {
        let service = try XCTUnwrap(YediProtoCatalog.services.first { $0.fullName == "yedi.housetainer.Members" })
        let member = try await founder("ht-member", nickname: "멤버")
        let admin = try fixture.token("ht-admin", app: "housetainer", role: "admin")
        let yedi = try await fixture.member("yedi-customer", app: .yedi, role: .customer)
        let slp = try await fixture.member("slp-member", app: "slp")
        let zipadoo = try await fixture.member("zipadoo-member", app: "zipadoo")
        let serviceClient = try RPCClient(
            configuration: fixture.harness.clientConfiguration(
                port: try await fixture.service.port, identity: "content"))
        let run = Task { await serviceClient.run() }
        let callers: [(String, RPCClient, CallOptions, refused: Bool)] = [
            ("member", fixture.client, member, false), ("admin", fixture.client, admin, false),
            ("anonymous", fixture.client, Self.anonymous, false),
            ("yedi", fixture.client, yedi, true), ("slp", fixture.client, slp, true),
            ("zipadoo", fixture.client, zipadoo, true),
            ("anonymous yedi", fixture.client, CallOptions(timeout: .seconds(10)), true),
            ("service", serviceClient, CallOptions(timeout: .seconds(10)), true),
        ]
        for method in service.methods {
            for (name, client, options, refused) in callers {
                var got = StatusCode.ok
                do {
                    _ = try await client.unary(method, payload: [], options: options)
                } catch let error as RPCError {
                    got = error.code
                }
                XCTAssertFalse([.unimplemented, .unknown, .internalError].contains(got), "\(method.fullName) \(name)")
                if refused {
                    // An anonymous caller of a USER method is asked to sign in; every other caller is denied.
                    var isPublic = false
                    if case .anyone? = method.access { isPublic = true }
                    let anonymousUserCall = name == "anonymous yedi" && !isPublic
                    XCTAssertEqual(
                        got, anonymousUserCall ? .unauthenticated : .permissionDenied, "\(method.fullName) by \(name)")
                }
            }
        }
        serviceClient.beginGracefulShutdown()
        await run.value
    }

    func testHousetainerDeleteAccountRemovesTheMemberFreesTheSlotAndForgetsTheAddress() async throws {
        let host = try await founder("host", nickname: "호스트")
        let guest = try await join("guest", nickname: "손님", invitedBy: host)
        let buddy = try await join("buddy", nickname: "버디", invitedBy: guest.options)
        let ticket = try await ticket("other", email: "other@example.kr")
        _ = try await members.joinWaitlist(
            .init(ticket: ticket, email: "guest@example.kr", snsURL: "https://x.com/g", instagramID: "g"),
            options: Self.anonymous)
        _ = try await invite("friend@example.com", by: guest.options)
        let (noProof, _) = await status { try await fixture.account.deleteAccount(.init(), options: guest.options) }
        XCTAssertEqual(noProof, .failedPrecondition, "a password-less member proves who they are")
        _ = try await fixture.account.deleteAccount(
            .init(
                proof: .init(proof: .provider(.init(provider: "google", token: "dev:google:guest:guest@example.kr")))),
            options: guest.options)
        let hostPage = try await members.getMember(.init(memberID: "host"), options: host)
        XCTAssertTrue(hostPage.buddies.isEmpty)
        XCTAssertTrue(hostPage.invitations.isEmpty, "the invitation that brought them in is gone, its slot free")
        let buddyPage = try await members.getMember(.init(memberID: buddy.id), options: host)
        XCTAssertTrue(buddyPage.inviterLeft)
        let admin = try fixture.token("ht-admin", app: "housetainer", role: "admin")
        let noEntries = try await members.listWaitlist(.init(), options: admin).entries.isEmpty
        XCTAssertTrue(noEntries)
        // The address may be invited again, and nothing of theirs is left in the tables.
        _ = try await invite("guest@example.kr", by: host)
        let database = fixture.service.environment.database
        let leftovers = try await database.read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT (SELECT count(*) FROM housetainer_member WHERE user_id = ?)
                        + (SELECT count(*) FROM housetainer_invitation WHERE inviter_id = ? OR joined_user_id = ?)
                        + (SELECT count(*) FROM housetainer_terms WHERE user_id = ?)
                        + (SELECT count(*) FROM user_identity WHERE user_id = ?)
                    """,
                arguments: [guest.id, guest.id, guest.id, guest.id, guest.id])
        }
        XCTAssertEqual(leftovers, 0)
    }
}
