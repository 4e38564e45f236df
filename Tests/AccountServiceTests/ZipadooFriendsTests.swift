import AccessTokens
import Foundation
import GRDB
import Logging
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// Zipadoo's `Friends` over TLS with the repository's app files: sign-up and its field rules, sign-in in
/// the app, friend refusals in order, who may answer a request, crossing requests and concurrent
/// accepts, deletion leaving no one in any list and freeing email and nickname.
final class ZipadooFriendsTests: XCTestCase {
    var fixture: AccountFixture!
    let images = ZipadooFakeContent()
    var content: RunningServer!

    override func setUp() async throws {
        let harness = try ServiceHarness()
        let clock = ManualClock()
        content = try await images.start(harness, clock: clock)
        fixture = try await AccountFixture.start(peers: ["content": content.port], clock: clock, harness: harness) {
            $0.apps = AccountFixture.repositoryApps
        }
    }

    override func tearDown() async throws {
        try await fixture?.stop()
        await content?.stop()
    }

    var friends: YediZipadoo.Friends.Client { YediZipadoo.Friends.Client(fixture.client) }
    static let anonymous = CallOptions(timeout: .seconds(10), metadata: ["yedi-app": "zipadoo"])

    static func signUpRequest(_ name: String, password: String = "potato123") -> YediZipadoo.SignUpRequest {
        YediZipadoo.SignUpRequest(
            email: "\(name)@example.com", password: password, name: "이\(name)", nickname: name,
            phone: "010-1234-5678", mole: "doo2")
    }

    /// Signs `nickname` up and answers the member's id and call options.
    func join(_ nickname: String) async throws -> (id: String, options: CallOptions) {
        let answer = try await friends.signUp(Self.signUpRequest(nickname), options: Self.anonymous)
        return (
            answer.profile?.member?.userID ?? "", fixture.options(answer.session?.accessToken ?? "")
        )
    }

    func status(_ call: () async throws -> some Any) async -> (StatusCode, String) { await Self.status(call) }

    static func status(_ call: () async throws -> some Any) async -> (StatusCode, String) {
        do {
            _ = try await call()
            return (.ok, "")
        } catch let error as RPCError {
            return (error.code, error.message)
        } catch {
            return (.unknown, "\(error)")
        }
    }

    func assertRefused(
        _ code: StatusCode, _ field: String, file: StaticString = #filePath, line: UInt = #line,
        _ call: () async throws -> some Any
    ) async {
        let (got, message) = await status(call)
        XCTAssertEqual(got, code, message, file: file, line: line)
        XCTAssertTrue(message.hasPrefix(field), "\"\(message)\" names \(field)", file: file, line: line)
    }

    func testZipadooSignUpChecksEachFieldAndSignsInInTheApp() async throws {
        var request = Self.signUpRequest("감자")
        let cases: [(String, (inout YediZipadoo.SignUpRequest) -> Void)] = [
            ("nickname", { $0.nickname = "감" }),
            ("nickname", { $0.nickname = "감자감자감자감" }),
            ("nickname", { $0.nickname = "감 자" }),
            ("mole", { $0.mole = "doo0" }),
            ("email", { $0.email = "potato@example" }),
            ("password", { $0.password = "potato1" }),
            ("phone", { $0.phone = "02-123-4567" }),
        ]
        for (field, change) in cases {
            var bad = request
            change(&bad)
            await assertRefused(.invalidArgument, field) { try await friends.signUp(bad, options: Self.anonymous) }
        }
        request.nickname = "감자감자감자"
        let answer = try await friends.signUp(request, options: Self.anonymous)
        XCTAssertEqual(answer.profile?.member?.mole, "doo2")
        XCTAssertEqual(answer.profile?.phone, "01012345678")
        var again = Self.signUpRequest("other")
        again.email = request.email
        await assertRefused(.alreadyExists, "email") { try await friends.signUp(again, options: Self.anonymous) }
        again.email = "other@example.com"
        again.nickname = request.nickname
        await assertRefused(.alreadyExists, "nickname") { try await friends.signUp(again, options: Self.anonymous) }
        // SignIn in Zipadoo with the app named; the token is a Zipadoo member's.
        let signedIn = try await fixture.account.signIn(
            .init(email: request.email, password: request.password), options: Self.anonymous)
        let options = fixture.options(signedIn.session?.accessToken ?? "")
        let profile = try await friends.getProfile(.init(), options: options)
        XCTAssertEqual(profile.member?.nickname, "감자감자감자")
        // The same address is unknown to YeDi's sign-in.
        let (yedi, _) = await status {
            try await fixture.account.signIn(.init(email: request.email, password: request.password))
        }
        XCTAssertEqual(yedi, .unauthenticated)
        // A Zipadoo token on a YeDi method is refused.
        let (me, _) = await status { try await fixture.account.getMe(.init(), options: options) }
        XCTAssertEqual(me, .permissionDenied)
        images.add("img-1", owner: profile.member?.userID ?? "")
        images.add("img-2", owner: "someone-else")
        await assertRefused(.permissionDenied, "profile_image_id") {
            try await friends.updateProfile(
                .init(profileImageID: "img-2", nickname: "새감자", phone: "01198765432", mole: "doo9"), options: options)
        }
        await assertRefused(.notFound, "profile_image_id") {
            try await friends.updateProfile(
                .init(profileImageID: "img-x", nickname: "새감자", phone: "01198765432", mole: "doo9"), options: options)
        }
        let updated = try await friends.updateProfile(
            .init(profileImageID: "img-1", nickname: "새감자", phone: "01198765432", mole: "doo9"), options: options)
        XCTAssertEqual(updated.member?.profileImageID, "img-1")
        XCTAssertEqual(updated.member?.mole, "doo9")
        XCTAssertEqual(updated.member?.nickname, "새감자")
        // ChangePassword (the platform's) ends the member's other sign-ins.
        let other = try await fixture.account.signIn(
            .init(email: request.email, password: request.password), options: Self.anonymous)
        let changed = try await fixture.account.changePassword(
            .init(currentPassword: request.password, newPassword: "sweetpotato9"), options: options)
        let (oldRefresh, _) = await status {
            try await fixture.account.refreshSession(.init(refreshToken: other.session?.refreshToken ?? ""))
        }
        XCTAssertEqual(oldRefresh, .unauthenticated, "the other sign-in ended")
        let fresh = fixture.options(changed.session?.accessToken ?? "")
        _ = try await friends.getProfile(.init(), options: fresh)
        _ = try await fixture.account.signIn(
            .init(email: request.email, password: "sweetpotato9"), options: Self.anonymous)
    }

    func testZipadooFriendRefusalsComeInOrderAndOnlyTheRecipientAnswers() async throws {
        let ana = try await join("ana")
        let bo = try await join("bo")
        await assertRefused(.notFound, "nickname") {
            try await friends.requestFriend(.init(nickname: "nobody"), options: ana.options)
        }
        await assertRefused(.invalidArgument, "nickname") {
            try await friends.requestFriend(.init(nickname: "ana"), options: ana.options)
        }
        _ = try await friends.requestFriend(.init(nickname: "bo"), options: ana.options)
        let (twice, twiceMessage) = await status {
            try await friends.requestFriend(.init(nickname: "bo"), options: ana.options)
        }
        XCTAssertEqual(twice, .alreadyExists)
        XCTAssertTrue(twiceMessage.contains("이미 요청한"), twiceMessage)
        let (crossed, _) = await status { try await friends.requestFriend(.init(nickname: "ana"), options: bo.options) }
        XCTAssertEqual(crossed, .failedPrecondition)
        let (byRequester, _) = await status {
            try await friends.acceptFriend(.init(userID: bo.id), options: ana.options)
        }
        XCTAssertEqual(byRequester, .permissionDenied, "a non-recipient cannot accept")
        let incoming = try await friends.listFriendRequests(.init(), options: bo.options)
        XCTAssertEqual(incoming.requesters.map(\.userID), [ana.id])
        _ = try await friends.acceptFriend(.init(userID: ana.id), options: bo.options)
        let (already, alreadyMessage) = await status {
            try await friends.requestFriend(.init(nickname: "ana"), options: bo.options)
        }
        XCTAssertEqual(already, .alreadyExists)
        XCTAssertTrue(alreadyMessage.contains("이미 친구"), alreadyMessage)
        let listed = try await friends.listFriends(.init(), options: ana.options)
        XCTAssertEqual(listed.friends.map(\.nickname), ["bo"])

        // CheckFriends is booking's alone.
        let booking = try RPCClient(
            configuration: fixture.harness.clientConfiguration(
                port: try await fixture.service.port, identity: "booking"))
        let run = Task { await booking.run() }
        let checked = try await YediZipadoo.Friends.Client(booking).checkFriends(
            .init(userID: ana.id, candidateIDs: [bo.id, "stranger"]))
        XCTAssertEqual(checked.friendIDs, [bo.id])
        booking.beginGracefulShutdown()
        await run.value
        let (asMember, _) = await status {
            try await friends.checkFriends(.init(userID: ana.id, candidateIDs: [bo.id]), options: ana.options)
        }
        XCTAssertEqual(asMember, .permissionDenied)

        _ = try await friends.removeFriend(.init(userID: ana.id), options: bo.options)
        let afterRemove = try await friends.listFriends(.init(), options: ana.options)
        XCTAssertEqual(afterRemove.friends, [])
    }

    func testZipadooCrossingRequestsLeaveOneRowAndConcurrentAcceptsAndRemovesStayConsistent() async throws {
        let ana = try await join("ana")
        let bo = try await join("bo")
        let friends = self.friends
        async let one = Self.status { try await friends.requestFriend(.init(nickname: "bo"), options: ana.options) }
        async let two = Self.status { try await friends.requestFriend(.init(nickname: "ana"), options: bo.options) }
        let outcomes = await [one.0, two.0]
        XCTAssertEqual(outcomes.filter { $0 == .ok }.count, 1, "\(outcomes)")
        XCTAssertEqual(outcomes.filter { $0 == .failedPrecondition }.count, 1, "\(outcomes)")
        let rows = try await fixture.service.environment.database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM zipadoo_friendship") ?? 0
        }
        XCTAssertEqual(rows, 1)
        let anaAsked = outcomes[0] == .ok
        let recipient = anaAsked ? bo : ana
        let requester = anaAsked ? ana : bo
        let codes = await withTaskGroup(of: StatusCode.self) { group in
            for index in 0..<20 {
                group.addTask {
                    if index % 2 == 0 {
                        return await Self.status {
                            try await friends.acceptFriend(.init(userID: requester.id), options: recipient.options)
                        }.0
                    }
                    return await Self.status {
                        try await friends.removeFriend(.init(userID: recipient.id), options: requester.options)
                    }.0
                }
            }
            var all: [StatusCode] = []
            for await code in group { all.append(code) }
            return all
        }
        XCTAssertEqual(codes.filter { $0 == .ok }.count >= 1, true, "\(codes)")
        XCTAssertFalse(codes.contains(.unknown) || codes.contains(.internalError), "\(codes)")
        let state = try await fixture.service.environment.database.read { db in
            try Row.fetchAll(db, sql: "SELECT accepted_at_ms FROM zipadoo_friendship").map {
                ($0["accepted_at_ms"] as Int64?) != nil
            }
        }
        XCTAssertLessThanOrEqual(state.count, 1)
        let anaFriends = try await friends.listFriends(.init(), options: ana.options).friends.count
        let boFriends = try await friends.listFriends(.init(), options: bo.options).friends.count
        XCTAssertEqual(anaFriends, boFriends, "both sides agree")
        XCTAssertEqual(anaFriends, state.first.map { $0 ? 1 : 0 } ?? 0)
    }

    func testZipadooDeletedMembersAreInNoListAndTheirEmailAndNicknameSignUpAgain() async throws {
        let ana = try await join("ana")
        let bo = try await join("bo")
        let cy = try await join("cy")
        _ = try await friends.requestFriend(.init(nickname: "bo"), options: ana.options)
        _ = try await friends.acceptFriend(.init(userID: ana.id), options: bo.options)
        _ = try await friends.requestFriend(.init(nickname: "cy"), options: ana.options)
        _ = try await fixture.account.deleteAccount(.init(password: "potato123"), options: ana.options)
        let boFriends = try await friends.listFriends(.init(), options: bo.options)
        XCTAssertEqual(boFriends.friends, [])
        let cyRequests = try await friends.listFriendRequests(.init(), options: cy.options)
        XCTAssertEqual(cyRequests.requesters, [])
        let rows = try await fixture.service.environment.database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM zipadoo_friendship") ?? 0
        }
        XCTAssertEqual(rows, 0)
        let again = try await friends.signUp(Self.signUpRequest("ana"), options: Self.anonymous)
        XCTAssertNotEqual(again.profile?.member?.userID, ana.id)
    }

    func testZipadooKakaoSignInIsUnregisteredWithATicketThenSignsUpWithZipadoosNicknameRule() async throws {
        let kakao = try await AccountFixture.startServingApps()
        let inApp = AccountFixture.inApp("zipadoo")
        let assertion = YediAccount.ProviderAssertion(provider: "kakao", token: "dev:kakao:12345")
        let first = try await kakao.identity.verifyProvider(.init(assertion: assertion), options: inApp)
        guard case .signUp(let ticket)? = first.outcome else {
            try await kakao.stop()
            return XCTFail("no ticket on first use: \(first)")
        }
        let (tooLong, message) = await status {
            try await kakao.identity.completeIdentitySignUp(
                .init(ticket: ticket.ticket, nickname: "감자감자감자감"), options: inApp)
        }
        XCTAssertEqual(tooLong, .invalidArgument, message)
        let created = try await kakao.identity.completeIdentitySignUp(
            .init(ticket: ticket.ticket, nickname: "카카오"), options: inApp)
        let options = kakao.options(created.session?.accessToken ?? "")
        let zipadoo = YediZipadoo.Friends.Client(kakao.client)
        let updated = try await zipadoo.updateProfile(
            .init(nickname: "카카오", phone: "010-555-1234", mole: "doo5"), options: options)
        XCTAssertEqual(updated.member?.mole, "doo5")
        let again = try await kakao.identity.verifyProvider(.init(assertion: assertion), options: inApp)
        guard case .signedIn(let session)? = again.outcome else {
            try await kakao.stop()
            return XCTFail("no session the second time: \(again)")
        }
        XCTAssertEqual(session.user?.id, created.user?.id)
        try await kakao.stop()
    }
}

/// The stand-in ContentService: `GetImageRefs` over the images it was told of, with a token verifier that
/// knows Zipadoo (the on-behalf-of token of a member's call).
final class ZipadooFakeContent: Sendable {
    private let owners = LockedValue([String: String]())

    func add(_ id: String, owner: String) { owners.withLock { $0[id] = owner } }

    /// Verifies the forwarded tokens on `clock` (the service's, which issued them).
    func start(_ harness: ServiceHarness, clock: ManualClock) async throws -> RunningServer {
        let pki = harness.pki
        var logger = Logger(label: "test.fake-content")
        logger.logLevel = .warning
        let verifier = JWTVerifier(
            keys: [
                try TokenVerificationKey.load(pemFile: pki.devPKI.appendingPathComponent("token-signing.pub.pem").path)
            ],
            apps: [.yedi: [.customer, .designer], "zipadoo": ["member"]], now: { clock.now })
        return try await RunningServer.start(
            pki: pki,
            services: [
                RPCMethodSet(YediContent.ContentService.descriptor) { router in
                    router.register(YediContent.ContentService.Method.getImageRefs) { request, _ in
                        let owners = self.owners.value
                        return YediContent.GetImageRefsResponse(
                            images: request.imageIDs.compactMap { id in
                                owners[id].map { YediContent.OwnedImageRef(image: .init(id: id), ownerID: $0) }
                            })
                    }
                }
            ],
            interceptors: [AuthenticationInterceptor(verifier: verifier, servedApps: [.yedi, "zipadoo"])],
            clientCertificates: .optional, logger: logger
        ) { configuration in
            configuration.tls = pki.serverConfiguration("content", clientCertificates: .optional)
        }
    }
}

/// Every `Friends` method on the real handlers, with an empty request, as a member, anonymously (in
/// Zipadoo) and with booking's certificate: a real status each (never UNIMPLEMENTED, UNKNOWN or INTERNAL).
final class ZipadooFriendsRealStatusTests: XCTestCase {
    func testZipadooEveryFriendsMethodAnswersARealStatus() async throws {
        let fixture = try await AccountFixture.start { $0.apps = AccountFixture.repositoryApps }
        let member = try await fixture.member("ana", app: "zipadoo", nickname: "ana")
        let booking = try RPCClient(
            configuration: fixture.harness.clientConfiguration(
                port: try await fixture.service.port, identity: "booking"))
        let run = Task { await booking.run() }
        for method in YediZipadoo.Friends.descriptor.methods {
            for (caller, client, options) in [
                ("member", fixture.client, member), ("anonymous", fixture.client, ZipadooFriendsTests.anonymous),
                ("service", booking, CallOptions.defaults),
            ] {
                let code = await ZipadooFriendsTests.status {
                    _ = try await client.unary(method, payload: [], options: options)
                }.0
                XCTAssertFalse(
                    [.unimplemented, .unknown, .internalError].contains(code), "\(method.method) as \(caller): \(code)")
            }
        }
        booking.beginGracefulShutdown()
        await run.value
        try await fixture.stop()
    }
}
