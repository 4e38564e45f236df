import Foundation
import GRDB
import RPCAccess
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// SLP's `Matching` over TLS with the repository's app files, on the fixture's manual clock: the
/// profile after phone sign-up, queue entry's outcomes at their edges, the 700 m search, matching under
/// concurrent accepts, ratings and reports, and who may call at all.
final class SlpMatchingTests: SlpTestCase {
    private let cityHall = SlpStoreContract.cityHall

    /// An account of `app` stored directly (as phone sign-up leaves it: a nickname, no password) and a
    /// token; SLP members also get their profile through `CreateProfile` unless `profile` is false.
    private func member(
        _ id: String, app: AppID = "slp", role: UserRole = "member", born year: Int32 = 1998,
        profile: Bool = true
    ) async throws -> CallOptions {
        let options = try await fixture.member(id, app: app, role: role, nickname: "닉\(id)")
        if app == "slp", profile {
            let created = try await matching.createProfile(
                .init(birthDate: .init(year: year, month: 3, day: 4), gender: .female, email: "\(id)@example.com"),
                options: options)
            XCTAssertEqual(created.outcome, .created)
        }
        return options
    }

    private func enter(_ options: CallOptions, _ point: GeoPoint, studies: [String] = []) async throws
        -> YediSlp.EnterQueueResponse
    {
        try await matching.enterQueue(
            .init(latitude: point.latitude, longitude: point.longitude, studies: studies), options: options)
    }

    /// The status code and message of a call (`.ok` and "" when it succeeded).
    private func status(_ call: () async throws -> some Any) async -> (StatusCode, String) {
        do {
            _ = try await call()
            return (.ok, "")
        } catch let error as RPCError {
            return (error.code, error.message)
        } catch {
            return (.unknown, "\(error)")
        }
    }

    private func assertRefused(
        _ code: StatusCode, field: String, file: StaticString = #filePath, line: UInt = #line,
        _ call: () async throws -> some Any
    ) async {
        let (got, message) = await status(call)
        XCTAssertEqual(got, code, message, file: file, line: line)
        XCTAssertTrue(message.hasPrefix(field), "\"\(message)\" names \(field)", file: file, line: line)
    }

    func testSlpCreateProfileOnceForMembersAged17() async throws {
        let ana = try await member("ana", profile: false)
        let (before, _) = await status { try await matching.getState(.init(), options: ana) }
        XCTAssertEqual(before, .failedPrecondition, "no SLP call before the profile")
        // The clock reads 2026-09-21 in Seoul: born 2009-09-22 is 17 years minus a day.
        await assertRefused(.invalidArgument, field: "birth_date") {
            try await matching.createProfile(
                .init(birthDate: .init(year: 2009, month: 9, day: 22), gender: .female, email: "a@example.com"),
                options: ana)
        }
        await assertRefused(.invalidArgument, field: "birth_date") {
            try await matching.createProfile(
                .init(birthDate: .init(year: 2009, month: 2, day: 30), gender: .female, email: "a@example.com"),
                options: ana)
        }
        await assertRefused(.invalidArgument, field: "email") {
            try await matching.createProfile(
                .init(birthDate: .init(year: 2009, month: 9, day: 21), gender: .female, email: "ana@example"),
                options: ana)
        }
        await assertRefused(.invalidArgument, field: "gender") {
            try await matching.createProfile(
                .init(birthDate: .init(year: 2009, month: 9, day: 21), email: "a@example.com"), options: ana)
        }
        let created = try await matching.createProfile(
            .init(birthDate: .init(year: 2009, month: 9, day: 21), gender: .male, email: "Ana@Example.com"),
            options: ana)
        XCTAssertEqual(created.outcome, .created)
        XCTAssertEqual(created.myPage?.nickname, "닉ana")
        XCTAssertEqual(created.myPage?.email, "ana@example.com")
        XCTAssertEqual(created.myPage?.partnerMinAge, 17)
        let twice = try await matching.createProfile(
            .init(birthDate: .init(year: 1990, month: 1, day: 1), gender: .female, email: "b@example.com"),
            options: ana)
        XCTAssertEqual(twice.outcome, .alreadyRegistered)
        XCTAssertEqual(twice.myPage?.gender, .male, "the first profile stands")
        let state = try await matching.getState(.init(), options: ana)
        XCTAssertEqual(state.state, .general)
    }

    func testSlpMyPageKeepsItsRulesAndWornItemsMustBeOwned() async throws {
        let ana = try await member("ana")
        await assertRefused(.failedPrecondition, field: "avatar") {
            try await matching.updateMyPage(
                .init(gender: .female, partnerMinAge: 17, partnerMaxAge: 100, avatar: 2), options: ana)
        }
        await assertRefused(.invalidArgument, field: "avatar") {
            try await matching.updateMyPage(
                .init(gender: .female, partnerMinAge: 17, partnerMaxAge: 100, avatar: 5), options: ana)
        }
        await assertRefused(.invalidArgument, field: "partner_min_age") {
            try await matching.updateMyPage(.init(gender: .female, partnerMinAge: 16, partnerMaxAge: 30), options: ana)
        }
        await assertRefused(.invalidArgument, field: "partner_max_age") {
            try await matching.updateMyPage(.init(gender: .female, partnerMinAge: 30, partnerMaxAge: 29), options: ana)
        }
        await assertRefused(.invalidArgument, field: "favourite_study") {
            try await matching.updateMyPage(
                .init(gender: .female, favouriteStudy: "아홉글자스터디입니다", partnerMinAge: 17, partnerMaxAge: 100),
                options: ana)
        }
        let page = try await matching.updateMyPage(
            .init(gender: .male, favouriteStudy: "토익", searchable: true, partnerMinAge: 20, partnerMaxAge: 35),
            options: ana)
        XCTAssertEqual(page.favouriteStudy, "토익")
        XCTAssertEqual([page.partnerMinAge, page.partnerMaxAge], [20, 35])
        let read = try await matching.getMyPage(.init(), options: ana)
        XCTAssertEqual(read, page)
    }

    func testSlpPenaltyAt59And61SecondsAfterEndingAMatch() async throws {
        let ana = try await member("ana")
        let bo = try await member("bo")
        _ = try await enter(ana, cityHall)
        _ = try await enter(bo, cityHall)
        let sent = try await matching.request(.init(otherID: "ana"), options: bo)
        XCTAssertEqual(sent.outcome, .sent)
        let accepted = try await matching.accept(.init(otherID: "bo"), options: ana)
        XCTAssertEqual(accepted.outcome, .matched)
        let state = try await matching.getState(.init(), options: bo)
        XCTAssertEqual(state.state, .matched)
        XCTAssertEqual(state.partnerNickname, "닉ana")
        XCTAssertEqual(state.matchID, accepted.matchID)
        let stray = try await matching.endMatch(.init(otherID: "nobody"), options: ana)
        XCTAssertEqual(stray.outcome, .notYourPartner)
        let ended = try await matching.endMatch(.init(otherID: "bo"), options: ana)
        XCTAssertEqual(ended.outcome, .ended)
        XCTAssertEqual(ended.dodgeCount, 1)
        let again = try await matching.endMatch(.init(otherID: "ana"), options: bo)
        XCTAssertEqual(again.outcome, .notYourPartner, "the match is over for both")
        let left = try await matching.getState(.init(), options: bo)
        XCTAssertEqual(left.state, .general)
        XCTAssertTrue(left.dodged)

        let endedAt = fixture.clock.nowMilliseconds
        fixture.clock.advance(by: 59)
        let early = try await enter(ana, cityHall)
        XCTAssertEqual(early.outcome, .penalty)
        XCTAssertEqual(early.penaltyTier, 1)
        XCTAssertEqual(early.penaltyEndsAtMs, endedAt + 60_000)
        let partner = try await enter(bo, cityHall)
        XCTAssertEqual(partner.outcome, .entered, "the one left behind has no penalty")
        fixture.clock.advance(by: 2)
        let later = try await enter(ana, cityHall)
        XCTAssertEqual(later.outcome, .entered)
    }

    func testSlpSearchNearbyFindsMembersWithin700MetresNearestFirst() async throws {
        let me = try await member("me")
        let near = try await member("near")
        let edge = try await member("edge")
        let beyond = try await member("beyond")
        _ = try await enter(near, SlpStoreContract.north(of: cityHall, metres: 20), studies: ["Java", "토익"])
        _ = try await enter(edge, SlpStoreContract.north(of: cityHall, metres: 699), studies: ["java", "수학"])
        _ = try await enter(beyond, SlpStoreContract.north(of: cityHall, metres: 701), studies: ["영어"])
        _ = try await enter(me, cityHall)
        let sent = try await matching.request(.init(otherID: "me"), options: beyond)
        XCTAssertEqual(sent.outcome, .sent)
        let found = try await matching.searchNearby(
            .init(latitude: cityHall.latitude, longitude: cityHall.longitude), options: me)
        XCTAssertEqual(found.people.map(\.userID), ["near", "edge"])
        XCTAssertEqual(found.people.map(\.nickname), ["닉near", "닉edge"])
        XCTAssertEqual(found.people.last?.distanceM ?? 0, 699, accuracy: 0.01)
        XCTAssertEqual(found.nearbyStudies, ["Java", "토익", "수학"], "tags once each, ignoring case")
        XCTAssertEqual(found.requesters.map(\.userID), ["beyond"], "who asked me, wherever they are")
        XCTAssertEqual(found.recommendedStudies.first, "알고리즘")
        let pushes = try await fixture.service.environment.database.read { db in
            try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM notification WHERE user_id = 'me' AND kind = 'slp-request'") ?? 0
        }
        XCTAssertEqual(pushes, 1, "the requested member is told")
    }

    func testSlpTwoReportersLetAMemberQueueAndTheThirdRefusesIt() async throws {
        let target = try await member("target")
        let stranger = try await member("stranger")
        var reporters: [CallOptions] = []
        for index in 1...3 {
            let reporter = try await member("r\(index)")
            reporters.append(reporter)
            _ = try await enter(target, cityHall)
            _ = try await enter(reporter, cityHall)
            _ = try await matching.request(.init(otherID: "target"), options: reporter)
            let accepted = try await matching.accept(.init(otherID: "r\(index)"), options: target)
            XCTAssertEqual(accepted.outcome, .matched)
            let rated = try await matching.rate(
                .init(matchID: accepted.matchID, flags: Array(repeating: true, count: 9), comment: "고마워요"),
                options: target)
            XCTAssertTrue(rated.endedMatch)
            await assertRefused(.alreadyExists, field: "match_id") {
                try await matching.rate(
                    .init(matchID: accepted.matchID, flags: Array(repeating: false, count: 9)), options: target)
            }
        }
        await assertRefused(.failedPrecondition, field: "other_id") {
            try await matching.report(.init(otherID: "target", reasons: ["1"]), options: stranger)
        }
        await assertRefused(.invalidArgument, field: "reasons") {
            try await matching.report(.init(otherID: "target", reasons: []), options: reporters[0])
        }
        await assertRefused(.invalidArgument, field: "reasons") {
            try await matching.report(
                .init(otherID: "target", reasons: ["1", "2", "3", "4", "5", "6", "7"]), options: reporters[0])
        }
        let first = try await matching.report(.init(otherID: "target", reasons: ["1"]), options: reporters[0])
        XCTAssertTrue(first.counted)
        let twice = try await matching.report(
            .init(otherID: "target", reasons: ["5", "2"], comment: "다시 신고"), options: reporters[0])
        XCTAssertFalse(twice.counted, "one reporter counts once")
        XCTAssertEqual(twice.reportID, first.reportID)
        let replaced = try await YediModeration.Moderation.Client(fixture.client).listMyCases(
            .init(), options: reporters[0])
        XCTAssertEqual(replaced.cases.map(\.reasons), [["2", "5"]], "the second report replaced the first")
        XCTAssertEqual(replaced.cases.map(\.content), ["다시 신고"])
        _ = try await matching.report(.init(otherID: "target", reasons: ["3"], comment: "노쇼"), options: reporters[1])
        let withTwo = try await enter(target, cityHall)
        XCTAssertEqual(withTwo.outcome, .entered, "two distinct reporters")
        _ = try await matching.leaveQueue(.init(), options: target)
        _ = try await matching.report(.init(otherID: "target", reasons: ["4"]), options: reporters[2])
        let withThree = try await enter(target, cityHall)
        XCTAssertEqual(withThree.outcome, .reported)
        let state = try await matching.getState(.init(), options: target)
        XCTAssertEqual(state.state, .general, "a refused member is not queued")
    }

    /// One member asked fifty; all fifty accept at once: exactly one match, everyone else told the
    /// other is matched, and the pair names each other.
    func testSlpFiftyMembersAcceptingOneAtOnceGiveExactlyOneMatch() async throws {
        let star = try await member("star")
        _ = try await enter(star, cityHall)
        var accepters: [(String, CallOptions)] = []
        for index in 0..<50 {
            let id = "a\(index)"
            let options = try await member(id)
            _ = try await enter(options, SlpStoreContract.north(of: cityHall, metres: Double(index)))
            let sent = try await matching.request(.init(otherID: id), options: star)
            XCTAssertEqual(sent.outcome, .sent)
            accepters.append((id, options))
        }
        let client = matching
        let outcomes = try await withThrowingTaskGroup(of: (String, YediSlp.AcceptResponse).self) { group in
            for (id, options) in accepters {
                group.addTask { (id, try await client.accept(.init(otherID: "star"), options: options)) }
            }
            var all: [(String, YediSlp.AcceptResponse)] = []
            for try await outcome in group { all.append(outcome) }
            return all
        }
        let winners = outcomes.filter { $0.1.outcome == .matched }
        XCTAssertEqual(winners.count, 1)
        XCTAssertEqual(outcomes.filter { $0.1.outcome == .otherMatched }.count, 49)
        let winner = try XCTUnwrap(winners.first)
        let starState = try await matching.getState(.init(), options: star)
        XCTAssertEqual(starState.partnerID, winner.0)
        XCTAssertEqual(starState.matchID, winner.1.matchID)
        let winnerOptions = try XCTUnwrap(accepters.first { $0.0 == winner.0 }?.1)
        let winnerState = try await matching.getState(.init(), options: winnerOptions)
        XCTAssertEqual(winnerState.partnerID, "star")
        let active = try await fixture.service.environment.database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM slp_match_member WHERE active = 1") ?? 0
        }
        XCTAssertEqual(active, 2)
    }

    func testSlpBadInputIsRefusedNamingTheField() async throws {
        let ana = try await member("ana")
        let bo = try await member("bo")
        await assertRefused(.invalidArgument, field: "latitude") {
            try await matching.enterQueue(.init(latitude: 90.5, longitude: 127), options: ana)
        }
        await assertRefused(.invalidArgument, field: "longitude") {
            try await matching.enterQueue(.init(latitude: 37, longitude: .nan), options: ana)
        }
        await assertRefused(.invalidArgument, field: "longitude") {
            try await matching.searchNearby(.init(latitude: 37, longitude: -180.5), options: ana)
        }
        let tags: [[String]] = [
            (1...9).map { "t\($0)" }, ["아홉글자짜리스터디"], [""], ["토 익"], ["Java", "java"],
        ]
        for studies in tags {
            await assertRefused(.invalidArgument, field: "studies") {
                try await matching.enterQueue(.init(latitude: 37.5, longitude: 127, studies: studies), options: ana)
            }
        }
        let eight = try await matching.enterQueue(
            .init(latitude: 37.5, longitude: 127, studies: (1...8).map { "여덟글자스터디\($0)" }), options: ana)
        XCTAssertEqual(eight.outcome, .entered, "8 tags of 8 characters")
        await assertRefused(.invalidArgument, field: "other_id") {
            try await matching.request(.init(otherID: "ana"), options: ana)
        }
        await assertRefused(.notFound, field: "other_id") {
            try await matching.request(.init(otherID: "nobody"), options: ana)
        }
        let notSearching = try await matching.accept(.init(otherID: "bo"), options: ana)
        XCTAssertEqual(notSearching.outcome, .otherNotSearching)
        _ = try await enter(bo, cityHall)
        await assertRefused(.failedPrecondition, field: "other_id") {
            try await matching.accept(.init(otherID: "bo"), options: ana)
        }
        await assertRefused(.invalidArgument, field: "flags") {
            try await matching.rate(.init(matchID: "m", flags: Array(repeating: true, count: 8)), options: ana)
        }
        await assertRefused(.invalidArgument, field: "comment") {
            try await matching.rate(
                .init(
                    matchID: "m", flags: Array(repeating: true, count: 9), comment: String(repeating: "가", count: 501)),
                options: ana)
        }
        await assertRefused(.notFound, field: "match_id") {
            try await matching.rate(.init(matchID: "m", flags: Array(repeating: true, count: 9)), options: ana)
        }
    }

    /// The cross-app matrix for SLP's methods: YeDi, Housetainer and Zipadoo tokens, SLP's operator role
    /// and a service certificate without a user are refused; anonymous callers and a ticket are not signed
    /// in; an SLP member reaches every method (a real answer, never UNIMPLEMENTED, UNKNOWN or INTERNAL).
    func testSlpTenantOnlySlpMembersReachMatching() async throws {
        let yedi = try await member("yedi-dan", app: .yedi, role: .customer)
        let housetainer = try await member("ht-eun", app: "housetainer")
        let zipadoo = try await member("zp-fin", app: "zipadoo")
        let slpOperator = try await member("slp-op", role: "operator", profile: false)
        let slp = try await member("ana")
        let anonymous = CallOptions.defaults
        // A sign-up ticket is no access token.
        let ticket = ServiceHarness.bearer("not-a-token-but-a-ticket")
        let calls: [(String, (YediSlp.Matching.Client, CallOptions) async throws -> Any)] = [
            ("CreateProfile", { try await $0.createProfile(.init(), options: $1) }),
            ("GetMyPage", { try await $0.getMyPage(.init(), options: $1) }),
            ("UpdateMyPage", { try await $0.updateMyPage(.init(), options: $1) }),
            ("GetState", { try await $0.getState(.init(), options: $1) }),
            ("EnterQueue", { try await $0.enterQueue(.init(), options: $1) }),
            ("LeaveQueue", { try await $0.leaveQueue(.init(), options: $1) }),
            ("SearchNearby", { try await $0.searchNearby(.init(), options: $1) }),
            ("Request", { try await $0.request(.init(), options: $1) }),
            ("Accept", { try await $0.accept(.init(), options: $1) }),
            ("EndMatch", { try await $0.endMatch(.init(), options: $1) }),
            ("Rate", { try await $0.rate(.init(), options: $1) }),
            ("Report", { try await $0.report(.init(), options: $1) }),
        ]
        XCTAssertEqual(
            calls.count + 3, YediSlp.Matching.descriptor.methods.count,
            "every member method of Matching, GetMatch, and the public SignUp and GetMe (below)")
        let refused: [(String, CallOptions, StatusCode)] = [
            ("with a YeDi token", yedi, .permissionDenied),
            ("with a Housetainer token", housetainer, .permissionDenied),
            ("with a Zipadoo token", zipadoo, .permissionDenied),
            ("with SLP's operator role", slpOperator, .permissionDenied),
            ("without a token", anonymous, .unauthenticated),
            ("with a ticket", ticket, .unauthenticated),
        ]
        let serviceClient = fixture.harness.clientConfiguration(
            port: try await fixture.service.port, identity: "chat")
        for (name, call) in calls {
            for (label, options, expected) in refused {
                let (code, _) = await status { try await call(matching, options) }
                XCTAssertEqual(code, expected, "\(name) \(label)")
            }
            let (serviceCode, _) = await status {
                try await withRPCClient(configuration: serviceClient) { client in
                    _ = try await call(YediSlp.Matching.Client(client), CallOptions.defaults)
                }
            }
            XCTAssertEqual(serviceCode, .permissionDenied, "\(name) with a service certificate and no user")
            let (slpCode, message) = await status { try await call(matching, slp) }
            XCTAssertTrue(
                [.ok, .invalidArgument, .failedPrecondition].contains(slpCode), "\(name) for an SLP member: \(message)")
        }
    }

    /// SignUp and GetMe are public to SLP alone: other apps' tokens and anonymous callers of another app
    /// are refused, a service certificate too; an anonymous SLP caller without a ticket is not signed in;
    /// SLP's members and operators get an answer.
    func testSlpTenantSignUpAndGetMeArePublicToSlpAlone() async throws {
        let yedi = try await member("yedi-dan", app: .yedi, role: .customer)
        let housetainer = try await member("ht-eun", app: "housetainer")
        let zipadoo = try await member("zp-fin", app: "zipadoo")
        let slpOperator = try await member("slp-op", role: "operator", profile: false)
        let slp = try await member("ana")
        let calls: [(String, (YediSlp.Matching.Client, CallOptions) async throws -> Any)] = [
            ("SignUp", { try await $0.signUp(.init(), options: $1) }),
            ("GetMe", { try await $0.getMe(.init(), options: $1) }),
        ]
        let cases: [(String, CallOptions, StatusCode)] = [
            ("with a YeDi token", yedi, .permissionDenied),
            ("with a Housetainer token", housetainer, .permissionDenied),
            ("with a Zipadoo token", zipadoo, .permissionDenied),
            ("anonymous in YeDi", CallOptions.defaults, .permissionDenied),
            ("anonymous in Housetainer", AccountFixture.inApp("housetainer"), .permissionDenied),
            ("anonymous in SLP without a ticket", AccountFixture.inApp("slp"), .unauthenticated),
            ("with a ticket as a token", ServiceHarness.bearer("not-a-token-but-a-ticket"), .unauthenticated),
            ("with SLP's operator role", slpOperator, .ok),
            ("as an SLP member", slp, .ok),
        ]
        let serviceClient = fixture.harness.clientConfiguration(port: try await fixture.service.port, identity: "chat")
        for (name, call) in calls {
            for (label, options, expected) in cases {
                let (code, message) = await status { try await call(matching, options) }
                XCTAssertEqual(code, expected, "\(name) \(label): \(message)")
            }
            let (serviceCode, _) = await status {
                try await withRPCClient(configuration: serviceClient) { client in
                    _ = try await call(YediSlp.Matching.Client(client), CallOptions.defaults)
                }
            }
            XCTAssertEqual(serviceCode, .permissionDenied, "\(name) with a service certificate")
        }
        let me = try await matching.getMe(.init(), options: slp)
        XCTAssertEqual(me.outcome, .registered)
        let operatorMe = try await matching.getMe(.init(), options: slpOperator)
        XCTAssertEqual(operatorMe.outcome, .unregistered, "an account without its SLP profile")
    }

    /// GetMatch is ChatService's alone: members, other services and anonymous callers are refused.
    func testSlpGetMatchAnswersChatServiceOnly() async throws {
        let ana = try await member("ana")
        let port = try await fixture.service.port
        let request = YediSlp.GetMatchRequest(matchID: "m-1")
        let asChat = try await withRPCClient(
            configuration: fixture.harness.clientConfiguration(port: port, identity: "chat")
        ) { client in try await YediSlp.Matching.Client(client).getMatch(request) }
        XCTAssertFalse(asChat.found)
        let (asContent, _) = await status {
            try await withRPCClient(configuration: fixture.harness.clientConfiguration(port: port, identity: "content"))
            { client in try await YediSlp.Matching.Client(client).getMatch(request) }
        }
        XCTAssertEqual(asContent, .permissionDenied)
        let (asMember, _) = await status { try await matching.getMatch(request, options: ana) }
        XCTAssertEqual(asMember, .permissionDenied)
        let (anonymous, _) = await status { try await matching.getMatch(request) }
        XCTAssertEqual(anonymous, .unauthenticated)
    }
}
