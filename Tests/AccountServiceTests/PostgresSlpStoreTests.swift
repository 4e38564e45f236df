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

    /// The contract's replica checks with two replicas' stores on two pools of one database.
    func testTwoTicketsOfOneNumberWithOneNicknameOnTwoReplicasAnswerAlreadyRegistered() async throws {
        try await withReplicas {
            try await SlpStoreContract.twoTicketsOfOneNumberWithOneNicknameOnTwoReplicasAnswerAlreadyRegistered(
                $0, accounts: $1)
        }
    }

    func testTenAcceptsOfOneMemberOnTwoReplicasMakeOneMatch() async throws {
        try await withReplicas {
            try await SlpStoreContract.tenAcceptsOfOneMemberOnTwoReplicasMakeOneMatch($0, accounts: $1)
        }
    }

    func testAcceptsAlongARingOnTwoReplicasNeverPairAMemberTwice() async throws {
        try await withReplicas {
            try await SlpStoreContract.acceptsAlongARingOnTwoReplicasNeverPairAMemberTwice($0, accounts: $1)
        }
    }

    func testMutualRequestsAtOnceOnTwoReplicasMatchExactlyOnce() async throws {
        try await withReplicas {
            try await SlpStoreContract.mutualRequestsAtOnceOnTwoReplicasMatchExactlyOnce($0, accounts: $1)
        }
    }

    func testRatingsOfOneMemberOnTwoReplicasAllCount() async throws {
        try await withReplicas { try await SlpStoreContract.ratingsOfOneMemberOnTwoReplicasAllCount($0, accounts: $1) }
    }

    /// And what the store protocols cannot read: no request row names a deleted member (whose queue row,
    /// which the requesters list joins, went with the account).
    func testRequestsOfAMemberBeingDeletedOnTwoReplicasLeaveNoTrace() async throws {
        let inbox = PostgresInboxStoreTests.store(on: try XCTUnwrap(database).postgres, replica: "inbox", kept: 100)
        try await withReplicas {
            try await SlpStoreContract.requestsOfAMemberBeingDeletedOnTwoReplicasLeaveNoTrace(
                $0, accounts: $1, inbox: inbox)
        }
        let requests = try await count(
            "SELECT count(*) FROM slp_request WHERE from_id LIKE 'gone%' OR to_id LIKE 'gone%'")
        XCTAssertEqual(requests, 0)
    }

    // MARK: Helpers

    /// Runs `body` with this test's stores and a second replica's, on its own pool of the same database.
    private func withReplicas(_ body: ([any SlpStore], [any AccountStore]) async throws -> Void) async throws {
        try await XCTUnwrap(database).withSecondPool { postgres in
            let (other, otherAccounts) = try await Self.stores(on: postgres, replica: "b")
            try await body([store!, other], [accounts!, otherAccounts])
        }
    }

    private func count(_ query: PostgresQuery) async throws -> Int {
        try await XCTUnwrap(database).postgres.snapshot { tx in try await tx.query(query).first?.decode(Int.self) ?? -1
        }
    }
}
