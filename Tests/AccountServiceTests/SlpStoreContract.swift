import Foundation
import GRDB
import Logging
import RPCAccess
import ServiceRuntime
import XCTest
import YediProto

@testable import AccountService

/// What every `SlpStore` must do, written against the protocol only (members are made through the
/// account store, which owns them): a second engine gets a test class like `SQLiteSlpStoreTests`.
enum SlpStoreContract {
    /// Seoul City Hall.
    static let cityHall = GeoPoint(latitude: 37.5665, longitude: 126.9780)!
    /// 2026-09-21T14:13:20Z (the ManualClock's default start), in milliseconds.
    static let now: Int64 = 1_790_000_000_000

    /// The point `metres` north of `point` along its meridian (exactly that great-circle distance).
    static func north(of point: GeoPoint, metres: Double) -> GeoPoint {
        GeoPoint(
            latitude: point.latitude + metres / GeoPoint.earthRadiusMetres * 180 / .pi, longitude: point.longitude)!
    }

    static func profile(_ id: String, born year: Int = 1998, range: ClosedRange<Int> = 17...100) -> SlpProfileRecord {
        SlpProfileRecord(
            userID: id, gender: 1, birthDate: DateParts(year: year, month: 3, day: 4), email: "\(id)@example.com",
            partnerMinAge: range.lowerBound, partnerMaxAge: range.upperBound, createdAtMilliseconds: now)
    }

    /// An SLP account (phone sign-in: no address, no password) with a nickname, and its SLP profile.
    static func member(
        _ id: String, _ store: any SlpStore, accounts: any AccountStore, app: AppID = "slp",
        born year: Int = 1998, range: ClosedRange<Int> = 17...100
    ) async throws {
        var user = AccountStoreContract.user(id, role: "member")
        user.app = app
        user.email = ""
        user.passwordHash = nil
        user.nickname = "닉\(id)"
        try await accounts.createUser(user, designer: nil, session: AccountStoreContract.session("s-\(id)", user: id))
        if app == "slp" {
            let created = try await store.createProfile(profile(id, born: year, range: range))
            XCTAssertTrue(created)
        }
    }

    /// SLP members, each queued at City Hall without tags.
    static func queued(_ ids: [String], _ store: any SlpStore, accounts: any AccountStore) async throws {
        for id in ids {
            try await member(id, store, accounts: accounts)
            _ = try await store.enterQueue(userID: id, at: cityHall, studies: [], now: now)
        }
    }

    /// `requester` asks `accepter`, who accepts: matched as `matchID`.
    static func pair(_ accepter: String, _ requester: String, matchID: String, _ store: any SlpStore) async throws {
        _ = try await store.request(from: requester, to: accepter, matchID: matchID, now: now)
        let accepted = try await store.accept(userID: accepter, other: requester, matchID: matchID, now: now)
        XCTAssertEqual(accepted, .matched(matchID))
    }

    static func refused<T>(
        _ expected: SlpStoreError, _ message: String, file: StaticString = #filePath, line: UInt = #line,
        _ body: () async throws -> T
    ) async {
        do {
            _ = try await body()
            XCTFail("\(message): not refused", file: file, line: line)
        } catch let error as SlpStoreError {
            XCTAssertEqual(error, expected, message, file: file, line: line)
        } catch {
            XCTFail("\(message): \(error)", file: file, line: line)
        }
    }

    static func slpProfilesAreCreatedOnceForSlpMembersOnly(_ store: any SlpStore, accounts: any AccountStore)
        async throws
    {
        try await member("ana", store, accounts: accounts)
        let again = try await store.createProfile(profile("ana", born: 1990))
        XCTAssertFalse(again, "a second CreateProfile keeps the first")
        let stored = try await store.profile(userID: "ana")
        XCTAssertEqual(stored?.birthDate.year, 1998)
        XCTAssertEqual(stored?.nickname, "닉ana")
        XCTAssertEqual(stored?.reputation, Array(repeating: 0, count: 9))
        XCTAssertEqual(stored?.ownedAvatars, [0])
        try await member("yedi-bo", store, accounts: accounts, app: .yedi)
        await refused(.unknownUser, "a YeDi account gets no SLP profile") {
            try await store.createProfile(profile("yedi-bo"))
        }
        await refused(.noProfile, "no state without a profile") { try await store.state(userID: "yedi-bo") }
        await refused(.notOwned("avatar"), "an avatar not owned") {
            try await store.updateProfile(
                userID: "ana",
                SlpProfileUpdate(
                    gender: 2, favouriteStudy: "토익", searchable: true, partnerMinAge: 20, partnerMaxAge: 30,
                    avatar: 3, background: 0))
        }
        let updated = try await store.updateProfile(
            userID: "ana",
            SlpProfileUpdate(
                gender: 2, favouriteStudy: "토익", searchable: true, partnerMinAge: 20, partnerMaxAge: 30, avatar: 0,
                background: 0))
        XCTAssertEqual([updated.gender, updated.partnerMinAge, updated.partnerMaxAge], [2, 20, 30])
        XCTAssertEqual(updated.favouriteStudy, "토익")
    }

    static func slpQueueEntriesReplaceAndLeavingDropsRequests(_ store: any SlpStore, accounts: any AccountStore)
        async throws
    {
        for id in ["ana", "bo"] { try await member(id, store, accounts: accounts) }
        let far = north(of: cityHall, metres: 5_000)
        let entered = try await store.enterQueue(userID: "ana", at: far, studies: ["수학"], now: now)
        XCTAssertEqual(entered, .entered)
        _ = try await store.enterQueue(userID: "ana", at: cityHall, studies: ["영어", "토익"], now: now)
        _ = try await store.enterQueue(userID: "bo", at: north(of: cityHall, metres: 10), studies: [], now: now)
        let seenByBo = try await store.nearby(userID: "bo", around: cityHall, radius: 700, limit: 100, now: now)
        XCTAssertEqual(seenByBo.people.map(\.userID), ["ana"], "one entry per member, the caller left out")
        XCTAssertEqual(seenByBo.people.first?.studies, ["영어", "토익"], "re-entry replaced the tags")
        let farAway = try await store.nearby(userID: "bo", around: far, radius: 700, limit: 100, now: now)
        XCTAssertEqual(farAway.people, [], "re-entry replaced the position")
        let sent = try await store.request(from: "ana", to: "bo", matchID: "m0", now: now)
        XCTAssertEqual(sent, .sent)
        let requested = try await store.nearby(userID: "bo", around: far, radius: 700, limit: 100, now: now)
        XCTAssertEqual(requested.requesters.map(\.userID), ["ana"])
        let state = try await store.state(userID: "ana")
        XCTAssertTrue(state.queued)
        let left = try await store.leaveQueue(userID: "ana")
        XCTAssertNil(left)
        let general = try await store.state(userID: "ana")
        XCTAssertFalse(general.queued)
        let afterLeaving = try await store.nearby(userID: "bo", around: cityHall, radius: 700, limit: 100, now: now)
        XCTAssertEqual(afterLeaving.people, [])
        XCTAssertEqual(afterLeaving.requesters, [], "leaving the queue takes back the member's requests")
        let notSearching = try await store.request(from: "bo", to: "ana", matchID: "m1", now: now)
        XCTAssertEqual(notSearching, .otherNotSearching)
        await refused(.notQueued, "a member outside the queue cannot request") {
            try await store.request(from: "ana", to: "bo", matchID: "m2", now: now)
        }
        await refused(.unknownUser, "no such member") {
            try await store.request(from: "bo", to: "nobody", matchID: "m3", now: now)
        }
    }

    static func slpMatchesPairTwoMembersOnce(_ store: any SlpStore, accounts: any AccountStore) async throws {
        try await queued(["ana", "bo", "cy", "dan"], store, accounts: accounts)
        await refused(.noRequest, "accepting someone who did not ask") {
            try await store.accept(userID: "ana", other: "bo", matchID: "m0", now: now)
        }
        let sent = try await store.request(from: "ana", to: "bo", matchID: "m1", now: now)
        XCTAssertEqual(sent, .sent)
        _ = try await store.request(from: "ana", to: "cy", matchID: "m2", now: now)
        _ = try await store.request(from: "dan", to: "bo", matchID: "m3", now: now)
        let mutual = try await store.request(from: "bo", to: "ana", matchID: "m4", now: now)
        XCTAssertEqual(mutual, .matched("m4"), "a request answering one matches at once")
        let late = try await store.accept(userID: "cy", other: "ana", matchID: "m5", now: now)
        XCTAssertEqual(late, .otherMatched)
        let stale = try await store.accept(userID: "bo", other: "dan", matchID: "m6", now: now)
        XCTAssertEqual(stale, .alreadyMatched(SlpActiveMatch(matchID: "m4", partnerID: "ana")))
        let ana = try await store.state(userID: "ana")
        XCTAssertEqual(ana.active, SlpActiveMatch(matchID: "m4", partnerID: "bo"))
        XCTAssertEqual(ana.partnerNickname, "닉bo")
        XCTAssertFalse(ana.queued, "matched members leave the queue")
        let leaving = try await store.leaveQueue(userID: "bo")
        XCTAssertEqual(leaving, SlpActiveMatch(matchID: "m4", partnerID: "ana"))
        let seen = try await store.nearby(userID: "dan", around: cityHall, radius: 700, limit: 100, now: now)
        XCTAssertEqual(seen.people.map(\.userID), ["cy"])
        XCTAssertEqual(seen.requesters, [], "the matched members' requests are gone")
        let entering = try await store.enterQueue(userID: "ana", at: cityHall, studies: [], now: now)
        XCTAssertEqual(entering, .alreadyMatched(SlpActiveMatch(matchID: "m4", partnerID: "bo")))
        let partners = try await store.isPartner("bo", of: "ana")
        let strangers = try await store.isPartner("cy", of: "ana")
        XCTAssertEqual([partners, strangers], [true, false])
    }

    static func slpEndingAMatchRaisesTheDodgeCountAndThePenaltyIsReadByTheClock(
        _ store: any SlpStore, accounts: any AccountStore
    ) async throws {
        try await queued(["ana", "bo", "cy"], store, accounts: accounts)
        try await pair("ana", "bo", matchID: "m1", store)
        let notPartner = try await store.endMatch(userID: "ana", other: "cy", now: now)
        XCTAssertNil(notPartner)
        let dodges = try await store.endMatch(userID: "ana", other: "bo", now: now)
        XCTAssertEqual(dodges, 1)
        let left = try await store.state(userID: "bo")
        XCTAssertNil(left.active)
        XCTAssertTrue(left.dodged, "the partner left behind sees that the other ended it")
        let ender = try await store.state(userID: "ana")
        XCTAssertFalse(ender.dodged)
        let early = try await store.enterQueue(userID: "ana", at: cityHall, studies: [], now: now + 59_000)
        XCTAssertEqual(early, .penalty(tier: 1, endsAtMilliseconds: now + 60_000))
        let free = try await store.enterQueue(userID: "bo", at: cityHall, studies: [], now: now + 1)
        XCTAssertEqual(free, .entered, "no penalty for the one left behind")
        let later = try await store.enterQueue(userID: "ana", at: cityHall, studies: [], now: now + 61_000)
        XCTAssertEqual(later, .entered)
        // Tiers rise with the dodge count (2 minutes, then 3, and 3 from then on), each from the last end.
        var endedAt = now + 61_000
        for (round, tier) in [(2, 2), (3, 3), (4, 3)] {
            _ = try await store.request(from: "bo", to: "ana", matchID: "m\(round)", now: endedAt)
            _ = try await store.accept(userID: "ana", other: "bo", matchID: "m\(round)", now: endedAt)
            let count = try await store.endMatch(userID: "ana", other: "bo", now: endedAt)
            XCTAssertEqual(count, round)
            let minutes = Int64(tier) * 60_000
            let penalised = try await store.enterQueue(
                userID: "ana", at: cityHall, studies: [], now: endedAt + minutes - 1_000)
            XCTAssertEqual(penalised, .penalty(tier: tier, endsAtMilliseconds: endedAt + minutes))
            endedAt += minutes + 1_000
            let back = try await store.enterQueue(userID: "ana", at: cityHall, studies: [], now: endedAt)
            XCTAssertEqual(back, .entered)
            _ = try await store.enterQueue(userID: "bo", at: cityHall, studies: [], now: endedAt)
        }
    }

    static func slpRatingsCountOncePerSideAndTheFirstEndsTheMatch(_ store: any SlpStore, accounts: any AccountStore)
        async throws
    {
        try await queued(["ana", "bo", "cy"], store, accounts: accounts)
        try await pair("ana", "bo", matchID: "m1", store)
        var flags = Array(repeating: false, count: 9)
        flags[0] = true
        flags[8] = true
        let ended = try await store.rate(
            SlpRatingRecord(matchID: "m1", raterID: "ana", flags: flags, comment: "좋아요", createdAtMilliseconds: now))
        XCTAssertTrue(ended)
        await refused(.alreadyRated, "once per side") {
            try await store.rate(
                SlpRatingRecord(matchID: "m1", raterID: "ana", flags: flags, comment: "", createdAtMilliseconds: now))
        }
        await refused(.notYourMatch, "a stranger's match") {
            try await store.rate(
                SlpRatingRecord(matchID: "m1", raterID: "cy", flags: flags, comment: "", createdAtMilliseconds: now))
        }
        let other = try await store.rate(
            SlpRatingRecord(matchID: "m1", raterID: "bo", flags: flags, comment: "", createdAtMilliseconds: now))
        XCTAssertFalse(other, "the other side rates the ended match later")
        let bo = try await store.profile(userID: "bo")
        XCTAssertEqual(bo?.reputation, [1, 0, 0, 0, 0, 0, 0, 0, 1])
        XCTAssertEqual(bo?.comments, ["좋아요"])
        XCTAssertEqual(bo?.dodgeCount, 0)
        let state = try await store.state(userID: "ana")
        XCTAssertNil(state.active)
        XCTAssertTrue(state.rated)
        XCTAssertFalse(state.dodged, "a rating is no dodge")
        let again = try await store.enterQueue(userID: "ana", at: cityHall, studies: [], now: now)
        XCTAssertEqual(again, .entered, "no penalty after a rating")
        _ = try await store.enterQueue(userID: "bo", at: cityHall, studies: [], now: now)
        let seen = try await store.nearby(userID: "cy", around: cityHall, radius: 700, limit: 100, now: now)
        let card = seen.people.first { $0.userID == "bo" }
        XCTAssertEqual(card?.reputation, [1, 0, 0, 0, 0, 0, 0, 0, 1])
        XCTAssertEqual(card?.comments, ["좋아요"], "a search shows the comments received")
    }

    static func slpNearbyIsWithinTheRadiusNearestFirstAndAgesFitBothWays(
        _ store: any SlpStore, accounts: any AccountStore
    ) async throws {
        // On 2026-09-21 (Seoul): born 1998-03-04 → 28; 2009-03-04 → 17; 1970-03-04 → 56.
        try await member("me", store, accounts: accounts, range: 17...40)
        try await member("in-699", store, accounts: accounts)
        try await member("out-701", store, accounts: accounts)
        try await member("in-10", store, accounts: accounts, born: 2009)
        try await member("too-old", store, accounts: accounts, born: 1970)
        try await member("wants-older", store, accounts: accounts, range: 30...100)
        let places: [(String, Double)] = [
            ("in-699", 699), ("out-701", 701), ("in-10", 10), ("too-old", 5), ("wants-older", 6),
        ]
        for (id, metres) in places {
            _ = try await store.enterQueue(
                userID: id, at: north(of: cityHall, metres: metres), studies: [id], now: now)
        }
        let found = try await store.nearby(userID: "me", around: cityHall, radius: 700, limit: 100, now: now)
        XCTAssertEqual(found.people.map(\.userID), ["in-10", "in-699"])
        XCTAssertEqual(found.people.last?.metres ?? 0, 699, accuracy: 0.01)
        let first = try await store.nearby(userID: "me", around: cityHall, radius: 700, limit: 1, now: now)
        XCTAssertEqual(first.people.map(\.userID), ["in-10"])
    }

    static func slpQueueEntriesOlderThanTheRetentionArePruned(_ store: any SlpStore, accounts: any AccountStore)
        async throws
    {
        let day: Int64 = 86_400_000
        for id in ["old", "renewed", "fresh"] { try await member(id, store, accounts: accounts) }
        _ = try await store.enterQueue(userID: "old", at: cityHall, studies: [], now: now - 2 * day)
        _ = try await store.enterQueue(userID: "renewed", at: cityHall, studies: [], now: now - 2 * day)
        _ = try await store.enterQueue(userID: "renewed", at: cityHall, studies: [], now: now - 1)
        _ = try await store.enterQueue(userID: "fresh", at: cityHall, studies: [], now: now)
        _ = try await store.request(from: "fresh", to: "old", matchID: "m1", now: now)
        let pruned = try await store.pruneQueue(enteredBefore: now - day)
        XCTAssertEqual(pruned, 1)
        let seen = try await store.nearby(userID: "fresh", around: cityHall, radius: 700, limit: 100, now: now)
        XCTAssertEqual(seen.people.map(\.userID), ["renewed"], "re-entry renews the entry")
        let old = try await store.state(userID: "old")
        XCTAssertFalse(old.queued)
        let notSearching = try await store.request(from: "renewed", to: "old", matchID: "m2", now: now)
        XCTAssertEqual(notSearching, .otherNotSearching)
    }

    /// A 10-minute sign-up ticket for the phone `number`, stored.
    static func signUpTicket(_ name: String, number: String, accounts: any AccountStore) async throws
        -> SignUpTicketRecord
    {
        let record = SignUpTicketRecord(
            ticketHash: Array("ticket-\(name)".utf8), app: "slp", identity: .phone(number),
            expiresAtMilliseconds: now + 600_000)
        try await accounts.createSignUpTicket(record)
        return record
    }

    /// SignUp's rows for member `id` on `ticket`: the account (phone only), session, profile and device.
    static func signUpRecord(_ id: String, _ ticket: SignUpTicketRecord, nickname: String) -> SlpSignUpRecord {
        var user = AccountStoreContract.user(id, role: "member")
        user.app = "slp"
        user.email = ""
        user.passwordHash = nil
        user.nickname = nickname
        return SlpSignUpRecord(
            ticket: ticket, user: user, session: AccountStoreContract.session("s-\(id)", user: id),
            profile: profile(id),
            device: DeviceRecord(
                id: "d-\(id)", userID: id, app: "slp", platform: .fcm, token: "token-\(id)",
                sessionFamilyID: "s-\(id)", registeredAtMilliseconds: now), keepDevices: 10, now: now)
    }

    /// SignUp's one transaction: the ticket used up, the account, identity, profile and device written
    /// together; a taken nickname writes nothing and leaves the ticket; a used ticket and a registered
    /// number answer `alreadyRegistered`.
    static func slpSignUpIsOneTransaction(_ store: any SlpStore, accounts: any AccountStore) async throws {
        try await member("taken", store, accounts: accounts)
        func ticket(_ name: String, number: String) async throws -> SignUpTicketRecord {
            try await signUpTicket(name, number: number, accounts: accounts)
        }
        func signUp(_ id: String, _ ticket: SignUpTicketRecord, nickname: String) -> SlpSignUpRecord {
            signUpRecord(id, ticket, nickname: nickname)
        }
        let first = try await ticket("a", number: "+821011112222")
        let refused = try await store.signUp(signUp("ana", first, nickname: "닉taken"))
        XCTAssertEqual(refused, .nicknameTaken)
        let nothing = try await accounts.user(id: "ana")
        XCTAssertNil(nothing, "a refused sign-up writes nothing")
        let stillThere = try await accounts.signUpTicket(hash: first.ticketHash, app: "slp", now: now)
        XCTAssertNotNil(stillThere, "and leaves the ticket")

        let second = try await ticket("b", number: "+821011112222")
        let done = try await store.signUp(signUp("ana", first, nickname: "새싹"))
        XCTAssertEqual(done, .signedUp)
        let page = try await store.profile(userID: "ana")
        XCTAssertEqual(page?.nickname, "새싹")
        let linked = try await accounts.user(app: "slp", identity: .phone("+821011112222"))
        XCTAssertEqual(linked?.id, "ana")
        let used = try await store.ticketUsed(hash: first.ticketHash, now: now)
        XCTAssertTrue(used)
        let again = try await store.signUp(signUp("ana2", first, nickname: "다른이"))
        XCTAssertEqual(again, .alreadyRegistered, "the same ticket")
        let sameNumber = try await store.signUp(signUp("ana3", second, nickname: "또다른이"))
        XCTAssertEqual(sameNumber, .alreadyRegistered, "another ticket of a registered number")
        let unknown = try await store.signUp(
            signUp(
                "cy",
                SignUpTicketRecord(
                    ticketHash: Array("never".utf8), app: "slp", identity: .phone("+821033334444"),
                    expiresAtMilliseconds: now + 1), nickname: "씨"))
        XCTAssertEqual(unknown, .unknownTicket)
    }
}

// MARK: Replicas: several stores on one database, as several processes have, calling at once

extension SlpStoreContract {
    /// Two tickets of one number, each asking for the same nickname, signed up at once on two replicas
    /// (a double tap on two phones): one `signedUp`, the other `alreadyRegistered` as one replica answers
    /// when they come in turn, never `nicknameTaken`, which would send the person to pick another nickname.
    static func twoTicketsOfOneNumberWithOneNicknameOnTwoReplicasAnswerAlreadyRegistered(
        _ stores: [any SlpStore], accounts: [any AccountStore]
    ) async throws {
        for round in 0..<10 {
            let number = "+8210555\(String(format: "%05d", round))"
            let tickets = [
                try await signUpTicket("a\(round)", number: number, accounts: accounts[0]),
                try await signUpTicket("b\(round)", number: number, accounts: accounts[0]),
            ]
            async let first = stores[0].signUp(signUpRecord("a\(round)", tickets[0], nickname: "같은\(round)"))
            async let second = stores[1].signUp(signUpRecord("b\(round)", tickets[1], nickname: "같은\(round)"))
            let outcomes = try await [first, second]
            XCTAssertEqual(outcomes.filter { $0 == .signedUp }.count, 1, "round \(round): \(outcomes)")
            XCTAssertEqual(outcomes.filter { $0 == .alreadyRegistered }.count, 1, "round \(round): \(outcomes)")
        }
    }

    /// One member accepts 10 requesters at once, spread over the replicas: exactly one match; every other
    /// accept is answered `alreadyMatched` with it (never an error), and the requesters not chosen stay
    /// queued.
    static func tenAcceptsOfOneMemberOnTwoReplicasMakeOneMatch(_ stores: [any SlpStore], accounts: [any AccountStore])
        async throws
    {
        let requesters = (0..<10).map { "r\($0)" }
        try await queued(["hub"] + requesters, stores[0], accounts: accounts[0])
        for id in requesters {
            _ = try await stores[0].request(from: id, to: "hub", matchID: "unused-\(id)", now: now)
        }
        let outcomes = try await withThrowingTaskGroup(of: SlpAcceptOutcome.self) { group in
            for (index, id) in requesters.enumerated() {
                group.addTask {
                    try await stores[index % stores.count].accept(
                        userID: "hub", other: id, matchID: "m-\(id)", now: now)
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
        try await assertEveryMemberInOneMatchAtMost(
            stores[1], members: ["hub"] + requesters,
            matchIDs: requesters.flatMap { ["m-\($0)", "unused-\($0)"] })
        for id in requesters where id != partner {
            let state = try await stores[0].state(userID: id)
            XCTAssertTrue(state.queued, "\(id), not chosen, is still searching")
        }
    }

    /// Ten members in a ring, each accepting the request of the next while that one accepts the one after
    /// (A accepts B while B accepts C), on two replicas, 10 rounds: nobody is in two matches, every call
    /// is a business answer, and the matches are consistent pairs.
    static func acceptsAlongARingOnTwoReplicasNeverPairAMemberTwice(
        _ stores: [any SlpStore], accounts: [any AccountStore]
    ) async throws {
        let size = 10
        for round in 0..<10 {
            let ids = (0..<size).map { "u\(round)-\($0)" }
            try await queued(ids, stores[0], accounts: accounts[0])
            for index in 0..<size {
                _ = try await stores[0].request(from: ids[(index + 1) % size], to: ids[index], matchID: "x", now: now)
            }
            let outcomes = try await withThrowingTaskGroup(of: SlpAcceptOutcome.self) { group in
                for index in 0..<size {
                    group.addTask {
                        try await stores[index % stores.count].accept(
                            userID: ids[index], other: ids[(index + 1) % size], matchID: "m\(round)-\(index)",
                            now: now)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let matches = outcomes.filter { if case .matched = $0 { return true } else { return false } }
            XCTAssertGreaterThanOrEqual(matches.count, 1)
            XCTAssertLessThanOrEqual(matches.count, size / 2)
            try await assertEveryMemberInOneMatchAtMost(
                stores[round % stores.count], members: ids, matchIDs: ["x"] + (0..<size).map { "m\(round)-\($0)" })
        }
    }

    /// Two members request each other at the same moment on two replicas: the second to decide sees the
    /// first's request and matches, every time (without the row locks both stored a request and nobody
    /// was matched).
    static func mutualRequestsAtOnceOnTwoReplicasMatchExactlyOnce(
        _ stores: [any SlpStore], accounts: [any AccountStore]
    ) async throws {
        let (mine, other) = (stores[0], stores[1])
        let rounds = 12
        for round in 0..<rounds {
            let (ana, bo) = ("a\(round)", "b\(round)")
            try await queued([ana, bo], mine, accounts: accounts[0])
            async let here = mine.request(from: ana, to: bo, matchID: "m\(round)-a", now: now)
            async let there = other.request(from: bo, to: ana, matchID: "m\(round)-b", now: now)
            let outcomes = try await [here, there]
            XCTAssertEqual(outcomes.filter { $0 == .sent }.count, 1, "round \(round): \(outcomes)")
            XCTAssertEqual(
                outcomes.filter { if case .matched = $0 { return true } else { return false } }.count, 1,
                "round \(round): \(outcomes)")
            let state = try await mine.state(userID: ana)
            XCTAssertNotNil(state.active, "round \(round)")
        }
        try await assertEveryMemberInOneMatchAtMost(
            other, members: (0..<rounds).flatMap { ["a\($0)", "b\($0)"] },
            matchIDs: (0..<rounds).flatMap { ["m\($0)-a", "m\($0)-b"] })
    }

    /// Ten partners rate one member at once (ten ended matches), on two replicas: every flag counts.
    static func ratingsOfOneMemberOnTwoReplicasAllCount(_ stores: [any SlpStore], accounts: [any AccountStore])
        async throws
    {
        let raters = (0..<10).map { "p\($0)" }
        let store = stores[0]
        try await queued(["bo"] + raters, store, accounts: accounts[0])
        for id in raters {
            try await pair(id, "bo", matchID: "m-\(id)", store)
            _ = try await store.rate(
                SlpRatingRecord(
                    matchID: "m-\(id)", raterID: "bo", flags: Array(repeating: false, count: 9), comment: "",
                    createdAtMilliseconds: now))
            _ = try await store.enterQueue(userID: "bo", at: cityHall, studies: [], now: now)
        }
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for (index, id) in raters.enumerated() {
                group.addTask {
                    try await stores[index % stores.count].rate(
                        SlpRatingRecord(
                            matchID: "m-\(id)", raterID: id, flags: [true] + Array(repeating: false, count: 8),
                            comment: "고마워요 \(id)", createdAtMilliseconds: now))
                }
            }
            try await group.waitForAll()
        }
        let bo = try await store.profile(userID: "bo")
        XCTAssertEqual(bo?.reputation.first, 10)
        XCTAssertEqual(bo?.comments.count, 10)
    }

    /// A member deleted on one replica while making 10 requests on both: the deletion waits for the
    /// requests under way (each holds the member's account row), so afterwards nothing names the member,
    /// not even a notification of a request being made while the deletion cleared the others' inboxes
    /// (without the account lock, those committed after the clearing: 7 or 8 left per round); later
    /// requests find no profile. `stores` tell the members asked (inbox and push); `inbox` reads them.
    static func requestsOfAMemberBeingDeletedOnTwoReplicasLeaveNoTrace(
        _ stores: [any SlpStore], accounts: [any AccountStore], inbox: any NotificationStore
    ) async throws {
        let deleting = accounts[accounts.count - 1]
        for round in 0..<5 {
            let leaving = "gone\(round)"
            let asked = (0..<10).map { "o\(round)-\($0)" }
            try await queued([leaving] + asked, stores[0], accounts: accounts[0])
            let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                for (index, id) in asked.enumerated() {
                    group.addTask {
                        do {
                            let outcome = try await stores[index % stores.count].request(
                                from: leaving, to: id, matchID: "m\(round)-\(index)", now: now)
                            return "\(outcome)"
                        } catch SlpStoreError.noProfile {
                            return "noProfile"
                        }
                    }
                    if index == 0 {
                        group.addTask {
                            let deleted = try await deleting.deleteAccount(userID: leaving, now: now)
                            return deleted ? "deleted" : "not deleted"
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            XCTAssertEqual(outcomes.filter { $0 == "deleted" }.count, 1, "\(outcomes)")
            XCTAssertEqual(outcomes.filter { $0 == "sent" || $0 == "noProfile" }.count, 10, "\(outcomes)")
            let profile = try await stores[1].profile(userID: leaving)
            XCTAssertNil(profile, "round \(round): \(outcomes)")
            var naming: [String] = []
            for id in asked {
                let received = try await inbox.notifications(userID: id, app: "slp", after: nil, limit: 100)
                naming += received.filter { $0.0.content.data.contains { $0.value.contains(leaving) } }.map(\.0.id)
            }
            XCTAssertEqual(naming, [], "round \(round): notifications naming \(leaving) after \(outcomes)")
            await refused(.noProfile, "a request of the deleted member") {
                try await stores[1].request(from: leaving, to: asked[0], matchID: "late", now: now)
            }
        }
    }

    /// No member of `members` is in two active matches, each active match is its two members' active
    /// match, and no matched member is still queued. `matchIDs` are every match id the calls named, so
    /// every match they could have made is looked at.
    static func assertEveryMemberInOneMatchAtMost(
        _ store: any SlpStore, members: [String], matchIDs: [String], file: StaticString = #filePath,
        line: UInt = #line
    ) async throws {
        var activeMatches: [String: [String]] = [:]
        for id in Set(matchIDs).sorted() {
            guard let match = try await store.match(id: id), match.active else { continue }
            let (first, second) = match.members
            activeMatches[first, default: []].append(id)
            activeMatches[second, default: []].append(id)
            for (member, partner) in [(first, second), (second, first)] {
                let active = try await store.state(userID: member).active
                XCTAssertEqual(
                    active, SlpActiveMatch(matchID: id, partnerID: partner), "an active match without both members",
                    file: file, line: line)
            }
        }
        for member in members {
            let matches = activeMatches[member] ?? []
            XCTAssertLessThanOrEqual(
                matches.count, 1, "\(member) in two active matches: \(matches)", file: file, line: line)
            let state = try await store.state(userID: member)
            XCTAssertEqual(state.active?.matchID, matches.first, "\(member)'s active match", file: file, line: line)
            if state.active != nil {
                XCTAssertFalse(state.queued, "a matched member still queued", file: file, line: line)
            }
        }
    }
}

/// The contract against the SQLite store, on a scratch database of its own; and what only the database
/// guarantees (the unique index, positions leaving with their rows).
final class SQLiteSlpStoreTests: XCTestCase {
    private var database: ServiceDatabase!
    private var store: SQLiteSlpStore!
    private var accounts: SQLiteAccountStore!
    private var scratch: ScratchAccountDatabase!

    override func setUp() async throws {
        let scratch = try await ScratchAccountDatabase(for: self, name: "slp-store")
        self.scratch = scratch
        database = scratch.database
        accounts = scratch.accounts
        store = SQLiteSlpStore(database: database, notifier: nil, events: scratch.events)
    }

    func testSlpSignUpIsOneTransaction() async throws {
        try await SlpStoreContract.slpSignUpIsOneTransaction(store, accounts: accounts)
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

    // MARK: Replicas

    /// Runs `body` with this test's account store and a second replica's on the database (SQLite has one
    /// writer: they take turns), and an SLP store beside each telling the members asked through a notifier
    /// of its own, as the service's do.
    private func withReplicas(_ body: ([any SlpStore], [any AccountStore]) async throws -> Void) async throws {
        let accounts = [self.accounts!, try await scratch.replica("b")]
        try await body(
            accounts.enumerated().map { index, accounts in
                SQLiteSlpStore(
                    database: database,
                    notifier: Notifier(
                        outbox: accounts.events.outbox, ids: SequentialIDGenerator(prefix: "n-\(index)-"),
                        clock: ManualClock(), kept: 100),
                    events: accounts.events)
            }, accounts)
    }

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

    func testRequestsOfAMemberBeingDeletedOnTwoReplicasLeaveNoTrace() async throws {
        let inbox = SQLiteNotificationStore(
            database: database,
            notifier: Notifier(
                outbox: scratch.events.outbox, ids: SequentialIDGenerator(prefix: "n-inbox-"), clock: ManualClock(),
                kept: 100))
        try await withReplicas {
            try await SlpStoreContract.requestsOfAMemberBeingDeletedOnTwoReplicasLeaveNoTrace(
                $0, accounts: $1, inbox: inbox)
        }
    }

    // MARK: What the database guarantees

    /// The database, not a check before the insert, refuses a second active match of one member.
    func testSlpTheDatabaseRefusesASecondActiveMatchOfOneMember() async throws {
        for id in ["ana", "bo", "cy"] {
            try await SlpStoreContract.member(id, store, accounts: accounts)
        }
        try await database.write { db in try SQLiteSlpStore.match("ana", "bo", id: "m1", now: 1, db, events: nil) }
        do {
            try await database.write { db in try SQLiteSlpStore.match("cy", "ana", id: "m2", now: 2, db, events: nil) }
            XCTFail("a second active match of ana was stored")
        } catch let error as DatabaseError {
            XCTAssertEqual(error.resultCode, .SQLITE_CONSTRAINT)
        }
        let rows = try await database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM slp_match_member WHERE active = 1") ?? -1
        }
        XCTAssertEqual(rows, 2, "the refused match left nothing behind")
    }

    /// Deleting an account ends its active match for the partner (general, no penalty), takes back the
    /// flags of the ratings it wrote, and leaves no SLP row naming it.
    func testSlpDeletionEndsThePartnersMatchAndTakesBackItsRatings() async throws {
        let now = SlpStoreContract.now
        try await SlpStoreContract.queued(["ana", "bo", "cy"], store, accounts: accounts)
        try await SlpStoreContract.pair("ana", "bo", matchID: "m1", store)
        _ = try await store.rate(
            SlpRatingRecord(
                matchID: "m1", raterID: "ana", flags: [true] + Array(repeating: false, count: 8), comment: "좋아요",
                createdAtMilliseconds: now))
        _ = try await store.enterQueue(userID: "ana", at: SlpStoreContract.cityHall, studies: [], now: now)
        try await SlpStoreContract.pair("ana", "cy", matchID: "m2", store)
        let deleted = try await accounts.deleteAccount(userID: "ana", now: now)
        XCTAssertTrue(deleted)
        let cy = try await store.state(userID: "cy")
        XCTAssertNil(cy.active, "the partner is general")
        let entered = try await store.enterQueue(userID: "cy", at: SlpStoreContract.cityHall, studies: [], now: now)
        XCTAssertEqual(entered, .entered, "without a penalty")
        let bo = try await store.profile(userID: "bo")
        XCTAssertEqual(bo?.reputation, Array(repeating: 0, count: 9))
        XCTAssertEqual(bo?.comments, [])
        let traces = try await database.read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT (SELECT COUNT(*) FROM slp_profile WHERE user_id = 'ana')
                        + (SELECT COUNT(*) FROM slp_queue WHERE user_id = 'ana')
                        + (SELECT COUNT(*) FROM slp_request WHERE 'ana' IN (from_id, to_id))
                        + (SELECT COUNT(*) FROM slp_match WHERE 'ana' IN (user_a, user_b))
                        + (SELECT COUNT(*) FROM slp_match_member WHERE 'ana' IN (user_id, partner_id))
                        + (SELECT COUNT(*) FROM slp_rating WHERE 'ana' IN (rater_id, ratee_id))
                    """) ?? -1
        }
        XCTAssertEqual(traces, 0)
    }

    /// A match opens its chat room and its end closes it, each through an outbox job written in the
    /// match's transaction (the room id is the match id).
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
        let jobs = try await database.read { db in
            try Row.fetchAll(db, sql: "SELECT method, payload FROM runtime_outbox WHERE peer = 'chat' ORDER BY rowid")
                .map { row -> String in
                    let method: String = row["method"]
                    let payload: Data = row["payload"]
                    if method.hasSuffix("OpenMatchRoom") {
                        let open = try YediChat.OpenMatchRoomRequest(serializedBytes: [UInt8](payload))
                        return "open \(open.matchID) \(open.memberA) \(open.memberB)"
                    }
                    let close = try YediChat.CloseMatchRoomRequest(serializedBytes: [UInt8](payload))
                    return "close \(close.matchID)"
                }
        }
        XCTAssertEqual(jobs, ["open m1 ana bo", "close m1", "open m3 bo cy", "close m3"])
    }

    /// A position lives exactly as long as its queue row: leaving, matching and account deletion take it.
    func testSlpPositionsLeaveWithTheirQueueRows() async throws {
        try await SlpStoreContract.queued(["ana", "bo", "cy"], store, accounts: accounts)
        let positions = { [database] in
            try await database!.read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM slp_queue_rtree") ?? -1
            }
        }
        let all = try await positions()
        XCTAssertEqual(all, 3)
        _ = try await store.leaveQueue(userID: "ana")
        let afterLeaving = try await positions()
        XCTAssertEqual(afterLeaving, 2)
        let deleted = try await accounts.deleteAccount(userID: "bo", now: SlpStoreContract.now)
        XCTAssertTrue(deleted)
        let afterDeletion = try await positions()
        XCTAssertEqual(afterDeletion, 1)
        let profile = try await store.profile(userID: "bo")
        XCTAssertNil(profile, "the profile goes with the account")
    }
}
