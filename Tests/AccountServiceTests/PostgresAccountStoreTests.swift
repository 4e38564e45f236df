import Foundation
import PostgresNIO
import PostgresTestSupport
import RPCAccess
import ServiceRuntime
import XCTest
import YediProto

@testable import AccountService

/// The contract against the PostgreSQL store, on a fresh database of its own per test; then what needs
/// replicas: two pools on one database, as two processes have.
final class PostgresAccountStoreTests: XCTestCase {
    /// Every version of the service: the contract reaches tables of other stores' versions
    /// (`phone_send_throttle`, `housetainer_member`).
    static let migrations = AccountServiceDefinition.postgresMigrations ?? []

    private var database: TestDatabase?
    private var store: PostgresAccountStore!

    override func setUp() async throws {
        let database = try await TestDatabase(service: "account", migrations: Self.migrations)
        self.database = database
        store = try await Self.store(on: database.postgres, replica: "a")
    }

    override func tearDown() async throws {
        try await database?.close()
        database = nil
    }

    /// A store as one replica makes it: its own job ids, its own revocations in memory.
    static func store(on postgres: ServicePostgres, replica: String) async throws -> PostgresAccountStore {
        let clock = ManualClock()
        return PostgresAccountStore(
            postgres: postgres,
            events: PostgresAccountEvents(
                outbox: Outbox(ids: SequentialIDGenerator(prefix: "job-\(replica)-"), clock: clock)),
            revokedUsers: try await RevokedUsers(postgres: postgres, clock: clock))
    }

    // MARK: The contract

    func testUsersRoundTripAndEmailsAreUnique() async throws {
        try await AccountStoreContract.usersRoundTripAndEmailsAreUnique(store)
    }

    func testTenantAccountsAreScopedToTheirApp() async throws {
        try await AccountStoreContract.tenantAccountsAreScopedToTheirApp(store)
    }

    func testSignUpsCompleteOnceWithTheirOwnCode() async throws {
        try await AccountStoreContract.signUpsCompleteOnceWithTheirOwnCode(store)
        let mails = try await count("SELECT count(*) FROM runtime_outbox WHERE peer = 'mail'")
        XCTAssertEqual(mails, 4, "each sign-up's mail is in the outbox, written by the same transaction")
    }

    func testIdentitiesLinkOneAccountPerAppThroughTickets() async throws {
        try await AccountStoreContract.identitiesLinkOneAccountPerAppThroughTickets(store)
    }

    func testIdentityPhoneCodesAreUsedOnceSpendTriesAndExpire() async throws {
        try await AccountStoreContract.phoneCodesAreUsedOnceSpendTriesAndExpire(store)
        let messages = try await count("SELECT count(*) FROM runtime_outbox WHERE peer = 'sms'")
        XCTAssertEqual(messages, 3, "each verification's SMS is in the outbox, written by the same transaction")
    }

    func testPasswordResetsReplaceTheirOwnUsersPasswordOnce() async throws {
        try await AccountStoreContract.passwordResetsReplaceTheirOwnUsersPasswordOnce(store)
        let revoked = try await count("SELECT count(*) FROM runtime_outbox WHERE method LIKE '%RevokeUser'")
        XCTAssertEqual(revoked, 2 * 3, "each new password revokes the user's tokens in the three peers")
    }

    func testSessionsRotateOnceAndReuseRevokesTheFamily() async throws {
        try await AccountStoreContract.sessionsRotateOnceAndReuseRevokesTheFamily(store)
    }

    func testFollowCountsStayExact() async throws {
        try await AccountStoreContract.followCountsStayExact(store)
    }

    func testPasswordAttemptsAreDecidedOneAtATime() async throws {
        try await AccountStoreContract.passwordAttemptsAreDecidedOneAtATime(store)
    }

    func testDeletionRemovesEveryTraceAndSchedulesThePurges() async throws {
        try await AccountStoreContract.deletionRemovesEveryTrace(store)
        // The revocations and purges sit in the outbox, written by the same transaction, each peer's
        // revocation before its purge (a peer's jobs are delivered in `seq` order).
        let jobs = try await jobs()
        XCTAssertEqual(
            jobs,
            [
                "booking yedi.booking.BookingService/SetUpDesigner",
                "booking yedi.runtime.Revocations/RevokeUser", "booking yedi.booking.BookingService/PurgeUser",
                "chat yedi.runtime.Revocations/RevokeUser", "chat yedi.chat.ChatService/PurgeUser",
                "content yedi.runtime.Revocations/RevokeUser", "content yedi.content.ContentService/PurgeUser",
            ])
        let revoked = try await count("SELECT count(*) FROM runtime_revoked_user")
        XCTAssertEqual(revoked, 1, "deleted users' tokens are revoked in the deleting transaction")
        XCTAssertTrue(
            store.revokedUsers.isRevoked(userID: "d1", issuedAt: Date(timeIntervalSince1970: 0)),
            "and in this replica's memory once it committed")
    }

    /// A changed name or profile image queues `UserChanged` for each service with a `UserDirectory`, in the
    /// updating transaction; other fields concern no other service.
    func testUserDirectoryPeersAreToldOfAChangedPublicFieldInTheSameTransaction() async throws {
        try await store.createUser(
            AccountStoreContract.user("u1"), designer: nil, session: AccountStoreContract.session("s1", user: "u1"))
        let created = try await store.user(id: "u1")
        var user = try XCTUnwrap(created)
        user.phone = "01099998888"
        user.favouriteStyle = "단발"
        try await store.updateUser(user)
        let updated = try await store.user(id: "u1")
        XCTAssertEqual(updated, user)
        let none = try await jobs()
        XCTAssertEqual(none, [], "no public field changed")
        user.name = "새 이름"
        try await store.updateUser(user)
        user.profileImageID = "img_1"
        try await store.updateUser(user)
        let told = try await jobs()
        XCTAssertEqual(
            told,
            [
                "chat yedi.runtime.Users/UserChanged", "chat yedi.runtime.Users/UserChanged",
                "content yedi.runtime.Users/UserChanged", "content yedi.runtime.Users/UserChanged",
            ])
        var nobody = user
        nobody.id = "nobody"
        await AccountStoreContract.assertRefused(.notFound, "updated a user that does not exist") {
            try await self.store.updateUser(nobody)
        }
    }

    /// A designer's shop name or area is on every card beside their name: changing it tells the same
    /// services; changing the hours does not.
    func testUserDirectoryPeersAreToldOfAChangedShopCard() async throws {
        try await store.createUser(
            AccountStoreContract.user("d1", role: .designer), designer: AccountStoreContract.designer("d1"),
            session: AccountStoreContract.session("s1", user: "d1"))
        let cards = try await store.shopCards(designerIDs: ["d1", "nobody"])
        XCTAssertEqual(cards, ["d1": ShopCardRecord(name: "가게", city: "서울", district: "강남구")])
        let loaded = try await store.designer(id: "d1")
        var designer = try XCTUnwrap(loaded).1
        let told: PostgresQuery = "SELECT count(*) FROM runtime_outbox WHERE method LIKE '%UserChanged'"
        let afterCreation = try await count(told)
        designer.shop.closingHour = 20
        try await store.updateDesigner(designer)
        let hoursOnly = try await count(told)
        XCTAssertEqual(hoursOnly, afterCreation, "hours are not on a card")
        designer.shop.district = "마포구"
        try await store.updateDesigner(designer)
        let moved = try await count(told)
        XCTAssertEqual(moved, afterCreation + 2, "content and chat are told")
        let reloaded = try await store.designer(id: "d1")
        XCTAssertEqual(reloaded?.1, designer)
    }

    /// Search over the trigram path (three characters or more) and the scan path: the same buckets and
    /// order as SQLite, and pages that continue where the cursor says.
    func testSearchRanksNamesThenShopsAndPagesByCursor() async throws {
        let designers = [
            ("d1", "김서연", "블루밍 헤어", "마포구 연남동"),
            ("d2", "서연", "소울 살롱", "강남구 역삼동"),
            ("d3", "서연희", "다온 뷰티", "성동구 성수동"),
            ("d4", "박지호", "서연 스튜디오", "송파구 잠실동"),
            ("d5", "이하은", "리베 헤어", "서연동"),
            ("d6", "Seo Yeon", "Blue", "Mapo"),
        ]
        for (id, name, shop, district) in designers {
            try await store.createUser(
                AccountStoreContract.user(id, name: name, role: .designer),
                designer: AccountStoreContract.designer(id, shop: shop, district: district),
                session: AccountStoreContract.session("s-\(id)", user: id))
        }
        let short = try await store.searchDesigners(query: "서연", after: nil, limit: 10)
        XCTAssertEqual(short.map(\.0.user.id), ["d2", "d3", "d1", "d4", "d5"], "exact, prefix, inside, then shops")
        let long = try await store.searchDesigners(query: "서연희", after: nil, limit: 10)
        XCTAssertEqual(long.map(\.0.user.id), ["d3"])
        let folded = try await store.searchDesigners(query: "SEO YEON", after: nil, limit: 10)
        XCTAssertEqual(folded.map(\.0.user.id), ["d6"], "case-insensitive")
        let district = try await store.searchDesigners(query: "성수동", after: nil, limit: 10)
        XCTAssertEqual(district.map(\.0.user.id), ["d3"])
        // Pages of two continue without duplicates or gaps.
        var seen: [String] = []
        var cursor: ListPosition?
        repeat {
            let page = try await store.searchDesigners(query: "서연", after: cursor, limit: 2)
            seen += page.map(\.0.user.id)
            cursor = page.count == 2 ? page.last?.1 : nil
        } while cursor != nil
        XCTAssertEqual(seen, ["d2", "d3", "d1", "d4", "d5"])
    }

    /// The query is matched literally: `%` and `_` (and `\`) are characters, not wildcards, on the trigram
    /// path and on the scan path.
    func testSearchForPercentAndUnderscoreMatchesOnlyNamesWithThem() async throws {
        let names = [
            "pct": "할인50%", "pct3": "세%%%일", "us": "김_민준", "us3": "이___나", "aub": "a_b", "axb": "axb",
            "bs": "a\\b", "ab": "ab", "plain": "박민준",
        ]
        for (id, name) in names {
            try await store.createUser(
                AccountStoreContract.user(id, name: name, role: .designer),
                designer: AccountStoreContract.designer(id, shop: "가게", district: "강남구"),
                session: AccountStoreContract.session("s-\(id)", user: id))
        }
        func hits(_ query: String) async throws -> Set<String> {
            Set(try await store.searchDesigners(query: query, after: nil, limit: 100).map(\.0.user.id))
        }
        let percent = try await hits("%")
        XCTAssertEqual(percent, ["pct", "pct3"])
        let underscore = try await hits("_")
        XCTAssertEqual(underscore, ["us", "us3", "aub"])
        let threePercents = try await hits("%%%")
        XCTAssertEqual(threePercents, ["pct3"])
        let threeUnderscores = try await hits("___")
        XCTAssertEqual(threeUnderscores, ["us3"])
        let literal = try await hits("a_b")
        XCTAssertEqual(literal, ["aub"], "not axb")
        let backslash = try await hits("a\\b")
        XCTAssertEqual(backslash, ["bs"], "not ab")
        let withPercent = try await hits("50%")
        XCTAssertEqual(withPercent, ["pct"])
    }

    /// Recent searches keep their insertion order for ties (SQLite's rowid, here `seq`), move to the top
    /// when searched again, and keep the newest `keep`.
    func testRecentSearchesBreakTiesByInsertionAndKeepTheNewest() async throws {
        try await store.createUser(
            AccountStoreContract.user("u1"), designer: nil, session: AccountStoreContract.session("s1", user: "u1"))
        for (index, value) in ["펌", "염색", "커트"].enumerated() {
            _ = try await store.recordRecentSearch(
                userID: "u1", kind: .query, value: value, id: "r\(index)", now: 5, keep: 3)
        }
        let tied = try await store.recentSearches(userID: "u1")
        XCTAssertEqual(tied.map(\.value), ["커트", "염색", "펌"], "the same instant: the latest recorded first")
        let moved = try await store.recordRecentSearch(
            userID: "u1", kind: .query, value: "펌", id: "r9", now: 6, keep: 3)
        XCTAssertEqual(moved.map(\.id), ["r0", "r2", "r1"])
        let kept = try await store.recordRecentSearch(
            userID: "u1", kind: .query, value: "클리닉", id: "r3", now: 6, keep: 3)
        XCTAssertEqual(kept.map(\.value), ["클리닉", "펌", "커트"])
        let afterOne = try await store.deleteRecentSearches(userID: "u1", id: "r0")
        XCTAssertEqual(afterOne.map(\.value), ["클리닉", "커트"])
        let none = try await store.deleteRecentSearches(userID: "u1", id: nil)
        XCTAssertEqual(none, [])
    }

    // MARK: Two replicas on one database

    /// The contract's replica checks with three stores on three pools of one database.
    func testTheSameRefreshTokenOnTwoReplicasAtOnceRotatesOnce() async throws {
        try await withReplicas { try await AccountStoreContract.theSameRefreshTokenOnTwoReplicasAtOnceRotatesOnce($0) }
    }

    func testPasswordAttemptsOnReplicasAreCountedExactly() async throws {
        try await withReplicas { try await AccountStoreContract.passwordAttemptsOnReplicasAreCountedExactly($0) }
    }

    func testFollowsOnReplicasKeepTheCountExact() async throws {
        try await withReplicas { try await AccountStoreContract.followsOnReplicasKeepTheCountExact($0) }
        // PostgreSQL-specific: the rows, not only the count, are exactly one per follower.
        let rows = try await count("SELECT count(*) FROM follow WHERE designer_id = 'd1'")
        XCTAssertEqual(rows, 20)
    }

    // MARK: Helpers

    /// Runs `body` with three replicas' stores: this test's and two more, each on its own pool of the
    /// same database.
    private func withReplicas(_ body: ([any AccountStore]) async throws -> Void) async throws {
        let database = try XCTUnwrap(database)
        try await database.withSecondPool { second in
            try await database.withSecondPool { third in
                try await body([
                    store!, try await Self.store(on: second, replica: "b"),
                    try await Self.store(on: third, replica: "c"),
                ])
            }
        }
    }

    private func count(_ query: PostgresQuery) async throws -> Int {
        try await XCTUnwrap(database).postgres.snapshot { tx in try await tx.query(query).first?.decode(Int.self) ?? -1
        }
    }

    /// The outbox's jobs as "peer method", by peer, each peer's in the order they were written.
    private func jobs() async throws -> [String] {
        try await XCTUnwrap(database).postgres.snapshot { tx in
            try await tx.query("SELECT peer, method FROM runtime_outbox ORDER BY peer, seq").map { row in
                let (peer, method) = try row.decode((String, String).self)
                return "\(peer) \(method)"
            }
        }
    }
}
