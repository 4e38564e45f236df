import Foundation
import GRDB
import PostgresNIO
import PostgresTestSupport
import RPCAccess
import ServiceRuntime
import XCTest
import YediProto

@testable import AccountService

/// SLP's contract against the PostgreSQL store, on a fresh database of its own per test; what only the
/// database guarantees; then what needs replicas: two pools on one database, as two processes have,
/// calling at once.
final class PostgresSlpStoreTests: XCTestCase {
    /// Every version of the service: an account's deletion reaches every store's tables.
    static let migrations = AccountServiceDefinition.postgresMigrations ?? []

    private var database: TestDatabase?
    private var store: PostgresSlpStore!
    private var accounts: PostgresAccountStore!

    override func setUp() async throws {
        let database = try await TestDatabase(service: "account", migrations: Self.migrations)
        self.database = database
        (store, accounts) = try await Self.stores(on: database.postgres, replica: "a")
    }

    override func tearDown() async throws {
        try await database?.close()
        database = nil
    }

    /// The stores as one replica makes them: the account store deletes SLP's rows through `forget`.
    static func stores(on postgres: ServicePostgres, replica: String) async throws
        -> (PostgresSlpStore, PostgresAccountStore)
    {
        let accounts = try await PostgresAccountStoreTests.store(on: postgres, replica: replica)
        let store = PostgresSlpStore(
            postgres: postgres,
            notifier: PostgresNotifier(
                outbox: accounts.events.outbox, ids: SequentialIDGenerator(prefix: "n-\(replica)-"),
                clock: ManualClock(), kept: 100),
            events: accounts.events)
        return (store, accounts)
    }

    func testVersionsAreNamedAsOnSQLite() {
        var migrator = DatabaseMigrator()
        SlpSchema.migrate(&migrator)
        XCTAssertEqual(SlpPostgresSchema.migrations.map(\.name), migrator.migrations)
    }

    /// `account-11-slp-sign-up-and-sends` creates the `phone_send_throttle` the account store's SMS limits
    /// use (its own tests run on a stand-in of it).
    func testTheAccountStoresPhoneSendLimitsRunOnThisVersionsTable() async throws {
        try await AccountStoreContract.phoneCodesAreUsedOnceSpendTriesAndExpire(accounts)
    }

    // MARK: The contract

    func testSlpSignUpIsOneTransaction() async throws {
        try await SlpStoreContract.slpSignUpIsOneTransaction(store, accounts: accounts)
        let devices = try await count("SELECT count(*) FROM device WHERE user_id = 'ana' AND token = 'token-ana'")
        XCTAssertEqual(devices, 1, "the device is written by the sign-up")
    }

    func testSlpProfilesAreCreatedOnceForSlpMembersOnly() async throws {
        try await SlpStoreContract.slpProfilesAreCreatedOnceForSlpMembersOnly(store, accounts: accounts)
    }

    func testSlpQueueEntriesReplaceAndLeavingDropsRequests() async throws {
        try await SlpStoreContract.slpQueueEntriesReplaceAndLeavingDropsRequests(store, accounts: accounts)
    }

    func testSlpMatchesPairTwoMembersOnce() async throws {
        try await SlpStoreContract.slpMatchesPairTwoMembersOnce(store, accounts: accounts)
    }

    func testSlpEndingAMatchRaisesTheDodgeCountAndThePenaltyIsReadByTheClock() async throws {
        try await SlpStoreContract.slpEndingAMatchRaisesTheDodgeCountAndThePenaltyIsReadByTheClock(
            store, accounts: accounts)
    }

    func testSlpRatingsCountOncePerSideAndTheFirstEndsTheMatch() async throws {
        try await SlpStoreContract.slpRatingsCountOncePerSideAndTheFirstEndsTheMatch(store, accounts: accounts)
    }

    func testSlpNearbyIsWithinTheRadiusNearestFirstAndAgesFitBothWays() async throws {
        try await SlpStoreContract.slpNearbyIsWithinTheRadiusNearestFirstAndAgesFitBothWays(store, accounts: accounts)
    }

    func testSlpQueueEntriesOlderThanTheRetentionArePruned() async throws {
        try await SlpStoreContract.slpQueueEntriesOlderThanTheRetentionArePruned(store, accounts: accounts)
    }

    // MARK: What the database guarantees

    /// The unique partial index, not a check before the insert, refuses a second active match of one
    /// member, by its name.
    func testSlpTheDatabaseRefusesASecondActiveMatchOfOneMember() async throws {
        for id in ["ana", "bo", "cy"] {
            try await SlpStoreContract.member(id, store, accounts: accounts)
        }
        let postgres = try XCTUnwrap(database).postgres
        try await postgres.write { tx in
            try await PostgresSlpStore.match("ana", "bo", id: "m1", now: 1, tx, events: nil)
        }
        do {
            try await postgres.write { tx in
                try await PostgresSlpStore.match("cy", "ana", id: "m2", now: 2, tx, events: nil)
            }
            XCTFail("a second active match of ana was stored")
        } catch let violation as PostgresConstraintViolation {
            XCTAssertEqual(violation.constraint, "slp_one_active_match")
        }
        let rows = try await count("SELECT count(*) FROM slp_match_member WHERE active")
        XCTAssertEqual(rows, 2, "the refused match left nothing behind")
    }

    /// The nearby search answers what SQLite's R*Tree search answers: the same people in the same order
    /// (distance, then entry), ties included, across the antimeridian and with a page limit.
    func testSlpNearbyMatchesTheSQLiteStore() async throws {
        let scratch = try await ScratchAccountDatabase(for: self, name: "slp-nearby-twin")
        let sqlite = SQLiteSlpStore(database: scratch.database, notifier: nil, events: nil)
        let centres = [SlpStoreContract.cityHall, GeoPoint(latitude: -16.5, longitude: 179.999)!]
        var places: [(String, GeoPoint)] = []
        for (index, centre) in centres.enumerated() {
            for step in 0..<12 {
                // Three at each distance (ties), some beyond the radius, some across ±180°.
                let metres = Double(step / 3) * 230 + 1
                let bearing = Double(step) * .pi / 6
                let latitude = centre.latitude + metres * cos(bearing) / GeoPoint.earthRadiusMetres * 180 / .pi
                var longitude =
                    centre.longitude + metres * sin(bearing) / GeoPoint.earthRadiusMetres * 180 / .pi
                    / cos(centre.latitude * .pi / 180)
                if longitude > 180 { longitude -= 360 }
                places.append(("p\(index)-\(step)", GeoPoint(latitude: latitude, longitude: longitude)!))
            }
            // Exact ties: three members at one point.
            for twin in 0..<3 {
                places.append(("t\(index)-\(twin)", SlpStoreContract.north(of: centre, metres: 100)))
            }
        }
        places.shuffle()
        let engines: [(any SlpStore, any AccountStore)] = [(store, accounts), (sqlite, scratch.accounts)]
        for (slp, accounts) in engines {
            try await SlpStoreContract.member("me", slp, accounts: accounts)
            for (id, point) in places {
                try await SlpStoreContract.member(id, slp, accounts: accounts)
                _ = try await slp.enterQueue(userID: id, at: point, studies: [id], now: SlpStoreContract.now)
            }
        }
        for centre in centres {
            for limit in [100, 4] {
                let here = try await store.nearby(
                    userID: "me", around: centre, radius: 700, limit: limit, now: SlpStoreContract.now)
                let there = try await sqlite.nearby(
                    userID: "me", around: centre, radius: 700, limit: limit, now: SlpStoreContract.now)
                XCTAssertEqual(here.people.map(\.userID), there.people.map(\.userID))
                XCTAssertEqual(here.people.map(\.metres), there.people.map(\.metres))
                XCTAssertFalse(here.people.isEmpty)
            }
        }
    }

    /// Deleting an account ends its active match for the partner (general, no penalty), takes back the
    /// flags of the ratings it wrote, and leaves no SLP row naming it (`forget` as a deletion step).
    func testSlpDeletionEndsThePartnersMatchAndTakesBackItsRatings() async throws {
        let now = SlpStoreContract.now
        try await SlpStoreContract.queued(["ana", "bo", "cy"], store, accounts: accounts)
        try await SlpStoreContract.pair("ana", "bo", matchID: "m1", store)
        var flags = Array(repeating: false, count: 9)
        flags[0] = true
        flags[4] = true
        _ = try await store.rate(
            SlpRatingRecord(matchID: "m1", raterID: "ana", flags: flags, comment: "좋아요", createdAtMilliseconds: now))
        _ = try await store.rate(
            SlpRatingRecord(matchID: "m1", raterID: "bo", flags: flags, comment: "", createdAtMilliseconds: now))
        _ = try await store.enterQueue(userID: "ana", at: SlpStoreContract.cityHall, studies: [], now: now)
        try await SlpStoreContract.pair("ana", "cy", matchID: "m2", store)
        _ = try await store.request(from: "cy", to: "bo", matchID: "m3", now: now)
        let before = try await store.profile(userID: "bo")
        XCTAssertEqual(before?.reputation, [1, 0, 0, 0, 1, 0, 0, 0, 0])
        let deleted = try await accounts.deleteAccount(userID: "ana", now: now)
        XCTAssertTrue(deleted)
        let cy = try await store.state(userID: "cy")
        XCTAssertNil(cy.active, "the partner is general")
        let entered = try await store.enterQueue(userID: "cy", at: SlpStoreContract.cityHall, studies: [], now: now)
        XCTAssertEqual(entered, .entered, "without a penalty")
        let bo = try await store.profile(userID: "bo")
        XCTAssertEqual(bo?.reputation, Array(repeating: 0, count: 9), "the counters are given back")
        XCTAssertEqual(bo?.comments, [])
        let traces = try await count(
            """
            SELECT (SELECT count(*) FROM slp_profile WHERE user_id = 'ana')
                + (SELECT count(*) FROM slp_queue WHERE user_id = 'ana')
                + (SELECT count(*) FROM slp_request WHERE 'ana' IN (from_id, to_id))
                + (SELECT count(*) FROM slp_match WHERE 'ana' IN (user_a, user_b))
                + (SELECT count(*) FROM slp_match_member WHERE 'ana' IN (user_id, partner_id))
                + (SELECT count(*) FROM slp_rating WHERE 'ana' IN (rater_id, ratee_id))
                + (SELECT count(*) FROM slp_used_ticket WHERE user_id = 'ana')
            """)
        XCTAssertEqual(traces, 0)
        let others = try await count("SELECT count(*) FROM slp_profile")
        XCTAssertEqual(others, 2, "the partners stay")
    }

    /// A match opens its chat room and its end closes it, each through an outbox job written in the
    /// match's transaction (the room id is the match id); a stored request notifies the member asked.
    func testSlpMatchesOpenAndCloseTheirChatRoomsThroughTheOutbox() async throws {
        let now = SlpStoreContract.now
        try await SlpStoreContract.queued(["ana", "bo", "cy"], store, accounts: accounts)
        try await SlpStoreContract.pair("ana", "bo", matchID: "m1", store)
        _ = try await store.endMatch(userID: "ana", other: "bo", now: now)
        _ = try await store.enterQueue(userID: "bo", at: SlpStoreContract.cityHall, studies: [], now: now)
        _ = try await store.request(from: "cy", to: "bo", matchID: "m2", now: now)
        _ = try await store.request(from: "bo", to: "cy", matchID: "m3", now: now)
        _ = try await store.rate(
            SlpRatingRecord(
                matchID: "m3", raterID: "cy", flags: Array(repeating: false, count: 9), comment: "",
                createdAtMilliseconds: now))
        let jobs = try await XCTUnwrap(database).postgres.snapshot { tx in
            try await tx.query("SELECT method, payload FROM runtime_outbox WHERE peer = 'chat' ORDER BY seq").map {
                row -> String in
                let (method, payload) = try row.decode((String, ByteBuffer).self)
                let bytes = Array(payload.readableBytesView)
                if method.hasSuffix("OpenMatchRoom") {
                    let open = try YediChat.OpenMatchRoomRequest(serializedBytes: bytes)
                    return "open \(open.matchID) \(open.memberA) \(open.memberB)"
                }
                let close = try YediChat.CloseMatchRoomRequest(serializedBytes: bytes)
                return "close \(close.matchID)"
            }
        }
        XCTAssertEqual(jobs, ["open m1 ana bo", "close m1", "open m3 bo cy", "close m3"])
        let inbox = try await count(
            "SELECT count(*) FROM notification WHERE user_id = 'bo' AND kind = 'slp-request' AND strpos(data, 'cy') > 0"
        )
        XCTAssertEqual(inbox, 1, "the request's notification, in its transaction; the matching one sends none")
    }

    /// A queue entry, with its position, lives exactly as long as its row: leaving, matching and account
    /// deletion take it.
    func testSlpPositionsLeaveWithTheirQueueRows() async throws {
        try await SlpStoreContract.queued(["ana", "bo", "cy", "dan"], store, accounts: accounts)
        _ = try await store.leaveQueue(userID: "ana")
        let afterLeaving = try await count("SELECT count(*) FROM slp_queue")
        XCTAssertEqual(afterLeaving, 3)
        let deleted = try await accounts.deleteAccount(userID: "bo", now: SlpStoreContract.now)
        XCTAssertTrue(deleted)
        let afterDeletion = try await count("SELECT count(*) FROM slp_queue")
        XCTAssertEqual(afterDeletion, 2)
        try await SlpStoreContract.pair("cy", "dan", matchID: "m1", store)
        let afterMatching = try await count("SELECT count(*) FROM slp_queue")
        XCTAssertEqual(afterMatching, 0)
        let profile = try await store.profile(userID: "bo")
        XCTAssertNil(profile, "the profile goes with the account")
    }

    // MARK: Two replicas at once

    /// Two tickets of one number, each asking for the same nickname, signed up at once on two replicas
    /// (a double tap on two phones): one `signedUp`, the other `alreadyRegistered` as SQLite answers when
    /// they come in turn, never `nicknameTaken`, which would send the person to pick another nickname.
    func testTwoTicketsOfOneNumberWithOneNicknameOnTwoReplicasAnswerAlreadyRegistered() async throws {
        try await withSecondReplica { other in
            for round in 0..<10 {
                let number = "+8210555\(String(format: "%05d", round))"
                let tickets = [
                    try await SlpStoreContract.signUpTicket("a\(round)", number: number, accounts: accounts),
                    try await SlpStoreContract.signUpTicket("b\(round)", number: number, accounts: accounts),
                ]
                let mine = try XCTUnwrap(store)
                async let first = mine.signUp(
                    SlpStoreContract.signUpRecord("a\(round)", tickets[0], nickname: "같은\(round)"))
                async let second = other.signUp(
                    SlpStoreContract.signUpRecord("b\(round)", tickets[1], nickname: "같은\(round)"))
                let outcomes = try await [first, second]
                XCTAssertEqual(outcomes.filter { $0 == .signedUp }.count, 1, "round \(round): \(outcomes)")
                XCTAssertEqual(outcomes.filter { $0 == .alreadyRegistered }.count, 1, "round \(round): \(outcomes)")
            }
        }
    }

    /// One member accepts 10 requesters at once, half through each replica: exactly one match; every
    /// other accept is answered `alreadyMatched` with it (never an error), and the requesters not chosen
    /// stay queued.
    func testTenAcceptsOfOneMemberOnTwoReplicasMakeOneMatch() async throws {
        try await withSecondReplica { other in
            let requesters = (0..<10).map { "r\($0)" }
            try await SlpStoreContract.queued(["hub"] + requesters, store, accounts: accounts)
            for id in requesters {
                _ = try await store.request(from: id, to: "hub", matchID: "unused-\(id)", now: SlpStoreContract.now)
            }
            let stores = [store!, other]
            let outcomes = try await withThrowingTaskGroup(of: SlpAcceptOutcome.self) { group in
                for (index, id) in requesters.enumerated() {
                    group.addTask {
                        try await stores[index % 2].accept(
                            userID: "hub", other: id, matchID: "m-\(id)", now: SlpStoreContract.now)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let matched = outcomes.compactMap { outcome -> String? in
                if case .matched(let id) = outcome { return id }
                return nil
            }
            XCTAssertEqual(matched.count, 1, "\(outcomes)")
            let partner = String(try XCTUnwrap(matched.first).dropFirst(2))
            XCTAssertEqual(
                outcomes.filter { $0 == .alreadyMatched(SlpActiveMatch(matchID: "m-\(partner)", partnerID: partner)) }
                    .count, 9)
            try await assertEveryMemberInOneMatchAtMost()
            let queued = try await count("SELECT count(*) FROM slp_queue")
            XCTAssertEqual(queued, 9, "the requesters not chosen are still searching")
        }
    }

    /// Ten members in a ring, each accepting the request of the next while that one accepts the one after
    /// (A accepts B while B accepts C), on two replicas, 10 rounds: nobody is in two matches, every call
    /// is a business answer, and the matches are consistent pairs.
    func testAcceptsAlongARingOnTwoReplicasNeverPairAMemberTwice() async throws {
        try await withSecondReplica { other in
            let size = 10
            let stores = [store!, other]
            for round in 0..<10 {
                let ids = (0..<size).map { "u\(round)-\($0)" }
                try await SlpStoreContract.queued(ids, store, accounts: accounts)
                for index in 0..<size {
                    _ = try await store.request(
                        from: ids[(index + 1) % size], to: ids[index], matchID: "x", now: SlpStoreContract.now)
                }
                let outcomes = try await withThrowingTaskGroup(of: SlpAcceptOutcome.self) { group in
                    for index in 0..<size {
                        group.addTask {
                            try await stores[index % 2].accept(
                                userID: ids[index], other: ids[(index + 1) % size], matchID: "m\(round)-\(index)",
                                now: SlpStoreContract.now)
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                let matches = outcomes.filter { if case .matched = $0 { return true } else { return false } }
                XCTAssertGreaterThanOrEqual(matches.count, 1)
                XCTAssertLessThanOrEqual(matches.count, size / 2)
                try await assertEveryMemberInOneMatchAtMost()
            }
        }
    }

    /// Two members request each other at the same moment on two replicas: the second to decide sees the
    /// first's request and matches, every time (without the row locks both stored a request and nobody
    /// was matched).
    func testMutualRequestsAtOnceOnTwoReplicasMatchExactlyOnce() async throws {
        try await withSecondReplica { other in
            let mine = try XCTUnwrap(store)
            for round in 0..<12 {
                let (ana, bo) = ("a\(round)", "b\(round)")
                try await SlpStoreContract.queued([ana, bo], mine, accounts: accounts)
                async let here = mine.request(from: ana, to: bo, matchID: "m\(round)-a", now: SlpStoreContract.now)
                async let there = other.request(from: bo, to: ana, matchID: "m\(round)-b", now: SlpStoreContract.now)
                let outcomes = try await [here, there]
                XCTAssertEqual(outcomes.filter { $0 == .sent }.count, 1, "round \(round): \(outcomes)")
                XCTAssertEqual(
                    outcomes.filter { if case .matched = $0 { return true } else { return false } }.count, 1,
                    "round \(round): \(outcomes)")
                let state = try await mine.state(userID: ana)
                XCTAssertNotNil(state.active, "round \(round)")
            }
            try await assertEveryMemberInOneMatchAtMost()
        }
    }

    /// Ten partners rate one member at once (ten ended matches), on two replicas: every flag counts.
    func testRatingsOfOneMemberOnTwoReplicasAllCount() async throws {
        try await withSecondReplica { other in
            let raters = (0..<10).map { "p\($0)" }
            try await SlpStoreContract.queued(["bo"] + raters, store, accounts: accounts)
            for id in raters {
                try await SlpStoreContract.pair(id, "bo", matchID: "m-\(id)", store)
                _ = try await store.rate(
                    SlpRatingRecord(
                        matchID: "m-\(id)", raterID: "bo", flags: Array(repeating: false, count: 9), comment: "",
                        createdAtMilliseconds: SlpStoreContract.now))
                _ = try await store.enterQueue(
                    userID: "bo", at: SlpStoreContract.cityHall, studies: [], now: SlpStoreContract.now)
            }
            let stores = [store!, other]
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for (index, id) in raters.enumerated() {
                    group.addTask {
                        try await stores[index % 2].rate(
                            SlpRatingRecord(
                                matchID: "m-\(id)", raterID: id, flags: [true] + Array(repeating: false, count: 8),
                                comment: "고마워요 \(id)", createdAtMilliseconds: SlpStoreContract.now))
                    }
                }
                try await group.waitForAll()
            }
            let bo = try await store.profile(userID: "bo")
            XCTAssertEqual(bo?.reputation.first, 10)
            XCTAssertEqual(bo?.comments.count, 10)
        }
    }

    /// A member deleted on one replica while making 10 requests on both: the deletion waits for the
    /// requests under way (each holds the member's account row), so afterwards nothing names the member,
    /// not even a notification of a request being made while the deletion cleared the others' inboxes
    /// (without the account lock, those committed after the clearing: 7 or 8 left per round); later
    /// requests find no profile.
    func testRequestsOfAMemberBeingDeletedOnTwoReplicasLeaveNoTrace() async throws {
        try await withSecondReplica { other in
            let (_, otherAccounts) = try await Self.stores(on: XCTUnwrap(database).postgres, replica: "c")
            let stores = [store!, other]
            for round in 0..<5 {
                let leaving = "gone\(round)"
                let asked = (0..<10).map { "o\(round)-\($0)" }
                try await SlpStoreContract.queued([leaving] + asked, store, accounts: accounts)
                let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                    for (index, id) in asked.enumerated() {
                        group.addTask {
                            do {
                                let outcome = try await stores[index % 2].request(
                                    from: leaving, to: id, matchID: "m\(round)-\(index)", now: SlpStoreContract.now)
                                return "\(outcome)"
                            } catch SlpStoreError.noProfile {
                                return "noProfile"
                            }
                        }
                        if index == 0 {
                            group.addTask {
                                let deleted = try await otherAccounts.deleteAccount(
                                    userID: leaving, now: SlpStoreContract.now)
                                return deleted ? "deleted" : "not deleted"
                            }
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                XCTAssertEqual(outcomes.filter { $0 == "deleted" }.count, 1, "\(outcomes)")
                XCTAssertEqual(outcomes.filter { $0 == "sent" || $0 == "noProfile" }.count, 10, "\(outcomes)")
                let traces = try await count(
                    """
                    SELECT (SELECT count(*) FROM notification WHERE strpos(data, \(leaving)) > 0)
                        + (SELECT count(*) FROM slp_request WHERE \(leaving) IN (from_id, to_id))
                        + (SELECT count(*) FROM slp_profile WHERE user_id = \(leaving))
                    """)
                XCTAssertEqual(traces, 0, "round \(round): \(outcomes)")
                await SlpStoreContract.refused(.noProfile, "a request of the deleted member") {
                    try await other.request(from: leaving, to: asked[0], matchID: "late", now: SlpStoreContract.now)
                }
            }
        }
    }

    // MARK: Helpers

    /// No member has two active match rows, and each active match has its two members' rows.
    private func assertEveryMemberInOneMatchAtMost(file: StaticString = #filePath, line: UInt = #line) async throws {
        let doubled = try await count(
            "SELECT count(*) FROM (SELECT user_id FROM slp_match_member WHERE active GROUP BY user_id HAVING count(*) > 1) d"
        )
        XCTAssertEqual(doubled, 0, "a member in two active matches", file: file, line: line)
        let lopsided = try await count(
            """
            SELECT count(*) FROM slp_match m
            WHERE m.ended_at_ms IS NULL
                AND (SELECT count(*) FROM slp_match_member mm WHERE mm.match_id = m.id AND mm.active) <> 2
            """)
        XCTAssertEqual(lopsided, 0, "an active match without both members", file: file, line: line)
        let queuedWhileMatched = try await count(
            "SELECT count(*) FROM slp_queue q JOIN slp_match_member mm ON mm.user_id = q.user_id AND mm.active")
        XCTAssertEqual(queuedWhileMatched, 0, "a matched member still queued", file: file, line: line)
    }

    /// Runs `body` with a second replica's store: its own pool on the same database.
    private func withSecondReplica(_ body: (PostgresSlpStore) async throws -> Void) async throws {
        try await XCTUnwrap(database).withSecondPool { postgres in
            try await body(try await Self.stores(on: postgres, replica: "b").0)
        }
    }

    private func count(_ query: PostgresQuery) async throws -> Int {
        try await XCTUnwrap(database).postgres.snapshot { tx in try await tx.query(query).first?.decode(Int.self) ?? -1
        }
    }
}
