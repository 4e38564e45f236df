import Foundation
import RPCTestSupport
import XCTest

/// Issue 31's failover: 3 replicas of every service on PostgreSQL; while a client keeps writing (sign-ups,
/// reservations, messages) through every replica's address, one replica of each service gets SIGKILL, the
/// writes go on through the others, and the killed replicas restart and take traffic again. Afterwards
/// every write that was answered OK is there, the designer's live stream (on a killed replica) resumes on
/// another without a gap, and the only failures the client saw were UNAVAILABLE, each retried with the
/// same idempotency key or client message id as an app does.
final class FailoverOnPostgresTests: ReplicatedWritesTestCase {
    override class var engine: YediSystem.Engine { .postgres(replicas: 3) }

    func testOneReplicaOfEveryServiceKilledUnderMixedWrites() throws {
        let shop = try openShop()
        // The designer follows their stream on replica 1 of ChatService, the one that will be killed.
        let follower = try follow(shop, replica: 0)
        let writer = startWriting(shop)

        XCTAssertTrue(writer.wait(forRounds: 3, timeout: 120), "the writer got going: \(writer.report)")
        for service in YediSystem.services { system.kill(service, replica: 0) }
        writer.mark("killed")
        XCTAssertTrue(
            writer.wait(forRounds: 7, timeout: 180), "the writes go on through the other replicas: \(writer.report)")
        for service in YediSystem.services { try system.start(service, replica: 0) }
        writer.mark("restarted")
        XCTAssertTrue(writer.wait(forRounds: rounds, timeout: 180), "the writer finished: \(writer.report)")
        let done = writer.result
        print("failover: \(done.acknowledged.count) writes answered OK, failed attempts (retried): \(done.failures)")

        // Rounds were written while the replicas were down.
        let whileDown = done.acknowledged.filter { $0.phase == "killed" }
        for kind in ["sign-up", "reservation", "message"] {
            XCTAssertTrue(whileDown.contains { $0.kind == kind }, "no \(kind) answered OK while replicas were down")
        }
        // Read through the restarted replicas: they take traffic again.
        try checkEveryWrite(done, shop, readThrough: 0)
        try checkTheStreamResumes(follower, shop, done, on: 1)
    }
}

/// The same writes while PostgreSQL itself is stopped for 10 s (the system's own server, one role and one
/// database per service): every replica of every service says NOT_SERVING, a call answers UNAVAILABLE
/// within the database timeout instead of hanging, and once the server is back every replica says SERVING
/// again without a restart, every write answered OK is there and the stream resumes without a gap.
final class DatabaseOutageOnPostgresTests: ReplicatedWritesTestCase {
    override class var engine: YediSystem.Engine { .postgres(replicas: 3, ownServer: true) }

    func testPostgresStoppedFor10SecondsUnderMixedWrites() throws {
        let shop = try openShop()
        let follower = try follow(shop, replica: 0)
        let writer = startWriting(shop)

        XCTAssertTrue(writer.wait(forRounds: 3, timeout: 120), "the writer got going: \(writer.report)")
        try system.stopDatabaseServer()
        let stopped = Date()
        writer.mark("database stopped")
        let notServing = try eventually(timeout: 30) { try self.everyReplica(says: "NOT_SERVING") }
        XCTAssertTrue(notServing, "every replica says NOT_SERVING while PostgreSQL is stopped")
        let started = Date()
        let refused = try system.failingCall(
            "booking", "yedi.booking.BookingService/ListReservations", #"{"filter": "RESERVATION_FILTER_UPCOMING"}"#,
            token: shop.talkerToken, replica: 0)
        XCTAssertEqual(refused.status, "UNAVAILABLE", refused.message)
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "answered within the database timeout (5 s)")
        Thread.sleep(forTimeInterval: max(0, 10 - Date().timeIntervalSince(stopped)))

        try system.startDatabaseServer()
        writer.mark("database back")
        let serving = try eventually(timeout: 60) { try self.everyReplica(says: "SERVING") }
        XCTAssertTrue(serving, "every replica says SERVING again, without a restart")
        XCTAssertTrue(writer.wait(forRounds: rounds, timeout: 240), "the writer finished: \(writer.report)")
        let done = writer.result
        print("outage: \(done.acknowledged.count) writes answered OK, failed attempts (retried): \(done.failures)")
        try checkEveryWrite(done, shop, readThrough: nil)
        try checkTheStreamResumes(follower, shop, done, on: 1)
    }

    /// Whether every replica of every service answers `status` to a health check.
    private func everyReplica(says status: String) throws -> Bool {
        for service in YediSystem.services {
            for replica in 0..<system.replicaCount {
                let health = try system.runProbe([
                    "health", system.address(service, replica: replica), "--timeout", "1",
                ])
                guard health.output == status + "\n" else { return false }
            }
        }
        return true
    }
}

/// What the replicated-write tests share: a shop, a writer, a follower and the checks afterwards.
class ReplicatedWritesTestCase: RunningSystemTestCase {
    let account = "yedi.account.AccountService/"
    let booking = "yedi.booking.BookingService/"
    let chat = "yedi.chat.ChatService/"

    /// Rounds of writes (each a sign-up, a reservation and a message).
    let rounds = 12

    struct Shop {
        var designerID: String
        var designerToken: String
        var styleID: String
        /// Free starts, one per round.
        var starts: [Int64]
        var roomID: String
        /// The customer who sends the messages.
        var talkerToken: String
    }

    /// A designer with a 60-minute slot grid and no break, and a customer in a room with them.
    func openShop() throws -> Shop {
        let designer = try system.signUp(
            #"""
            {"email": "seoyeon@example.com", "password": "scissors99", "name": "이서연", "phone": "01055550000",
             "gender": "GENDER_FEMALE", "birthDate": {"year": 1990, "month": 2, "day": 1}, "role": "ROLE_DESIGNER",
             "designer": {"description": "커트", "skills": ["커트"], "rank": "DESIGNER_RANK_DESIGNER",
               "shop": {"name": "살롱 부산", "phone": "0515551234",
                 "address": {"city": "부산", "district": "해운대구", "detail": "1층"},
                 "latitude": 35.16, "longitude": 129.16}}}
            """#)
        let designerID = designer.string("user.id")
        let designerToken = designer.string("session.accessToken")
        var styleID = ""
        let setUp = try eventually(timeout: 30) {
            let menu = try? self.system.call("booking", self.booking + "GetMenu", #"{"designerId": "\#(designerID)"}"#)
            styleID = menu?.string("styles.0.id") ?? ""
            return !styleID.isEmpty
        }
        XCTAssertTrue(setUp, "SetUpDesigner arrived at BookingService")
        try system.call(
            "booking", booking + "UpdateSchedule",
            #"""
            {"schedule": {"openingMinute": 600, "closingMinute": 1200, "timeZone": "Asia/Seoul", "slotMinutes": 60}}
            """#, token: designerToken)
        let starts = try spacedFreeStarts(designerID: designerID)
        XCTAssertGreaterThanOrEqual(starts.count, rounds, "free starts for every round")

        let talker = try system.signUp(
            #"""
            {"email": "talker@example.com", "password": "hair2024!", "name": "박대화", "phone": "01055551111",
             "gender": "GENDER_MALE", "birthDate": {"year": 1992, "month": 6, "day": 7}, "role": "ROLE_CUSTOMER"}
            """#)
        let talkerToken = talker.string("session.accessToken")
        let roomID = try system.call(
            "chat", chat + "OpenRoom", #"{"designerId": "\#(designerID)"}"#, token: talkerToken
        ).string("room.id")
        return Shop(
            designerID: designerID, designerToken: designerToken, styleID: styleID, starts: starts, roomID: roomID,
            talkerToken: talkerToken)
    }

    /// The designer's live stream on one replica, once it says it is live.
    func follow(_ shop: Shop, replica: Int) throws -> RunningProcess {
        let follower = try system.follow("chat", chat + "Subscribe", "{}", token: shop.designerToken, replica: replica)
        XCTAssertTrue(
            follower.waitForOutput(timeout: 20) { $0.contains("caughtUp") },
            "the stream is live: \(follower.errorOutput)")
        return follower
    }

    /// A writer on a thread of its own, through every replica's address.
    func startWriting(_ shop: Shop) -> MixedWriter {
        let writer = MixedWriter(
            probe: system.probeRunner,
            addresses: Dictionary(uniqueKeysWithValues: YediSystem.services.map { ($0, system.address($0)) }),
            mailFolders: (0..<system.replicaCount).map {
                system.dataDirectory("account", replica: $0).appendingPathComponent("sent-mail").path
            },
            shop: shop)
        let rounds = self.rounds
        Thread { writer.run(rounds: rounds) }.start()
        return writer
    }

    /// Every write answered OK is there (read through `replica`, or any), and the client saw no failure but
    /// UNAVAILABLE.
    func checkEveryWrite(_ done: MixedWriter.Result, _ shop: Shop, readThrough replica: Int?) throws {
        XCTAssertEqual(done.failures.filter { !$0.contains("UNAVAILABLE") }, [], "failures other than UNAVAILABLE")
        for signUp in done.acknowledged where signUp.kind == "sign-up" {
            let me = try system.call("account", account + "GetMe", "{}", token: signUp.token, replica: replica)
            XCTAssertEqual(me.string("id"), signUp.id, "the sign-up of \(signUp.id) is lost")
            let upcoming = try system.call(
                "booking", booking + "ListReservations", #"{"filter": "RESERVATION_FILTER_UPCOMING"}"#,
                token: signUp.token, replica: replica)
            let held = (upcoming.at("reservations") as? [[String: Any]])?.map { $0.string("id") } ?? []
            let made = done.acknowledged.filter { $0.kind == "reservation" && $0.token == signUp.token }.map(\.id)
            XCTAssertEqual(held, made, "the reservations answered OK for \(signUp.id)")
        }
        let sent = done.acknowledged.filter { $0.kind == "message" }.map(\.id)
        XCTAssertEqual(sent.count, rounds)
        let history = try system.call(
            "chat", chat + "ListMessages", #"{"roomId": "\#(shop.roomID)", "limit": 100}"#, token: shop.talkerToken,
            replica: replica)
        let stored = ((history.at("messages") as? [[String: Any]]) ?? []).reversed()  // newest first
        XCTAssertEqual(stored.map { $0.string("id") }, sent, "each message answered OK, once, in order")
        XCTAssertEqual(stored.map { Int($0.string("seq")) ?? 0 }, Array(1...rounds))
    }

    /// The follower's stream ended; resumed on `replica` from its last position, the two together saw every
    /// message once, in order.
    func checkTheStreamResumes(_ follower: RunningProcess, _ shop: Shop, _ done: MixedWriter.Result, on replica: Int)
        throws
    {
        let sent = done.acknowledged.filter { $0.kind == "message" }.map(\.id)
        XCTAssertTrue(follower.waitForOutput(timeout: 20) { _ in follower.hasExited }, "the stream ended")
        let before = StreamEvents(follower.output)
        let resumed = try system.follow(
            "chat", chat + "Subscribe", #"{"afterPosition": "\#(before.lastPosition)"}"#, token: shop.designerToken,
            replica: replica)
        defer { resumed.kill() }
        XCTAssertTrue(
            resumed.waitForOutput(timeout: 20) {
                StreamEvents($0).messageIDs.count + before.messageIDs.count >= sent.count
            },
            "resumed: \(resumed.errorOutput)")
        XCTAssertEqual(before.messageIDs + StreamEvents(resumed.output).messageIDs, sent, "no gap, no duplicate")
    }

    /// Free starts at least 4 hours apart (any catalogue style fits between them), over the next week.
    private func spacedFreeStarts(designerID: String) throws -> [Int64] {
        var seoul = Calendar(identifier: .gregorian)
        seoul.timeZone = TimeZone(identifier: "Asia/Seoul")!
        func day(_ offset: Int) -> String {
            let date = seoul.dateComponents(
                [.year, .month, .day], from: Date().addingTimeInterval(Double(offset) * 86_400))
            return #"{"year": \#(date.year!), "month": \#(date.month!), "day": \#(date.day!)}"#
        }
        let slots = try system.call(
            "booking", booking + "ListFreeSlots",
            #"{"designerId": "\#(designerID)", "from": \#(day(1)), "to": \#(day(7))}"#)
        var picked: [Int64] = []
        for entry in (slots.at("days") as? [[String: Any]]) ?? [] {
            var last: Int64 = 0
            for start in ((entry["freeStartAtMs"] as? [String]) ?? []).compactMap({ Int64($0) }).sorted()
            where start >= last + 4 * 3_600_000 {
                picked.append(start)
                last = start
            }
        }
        return picked
    }
}

/// A subscriber's printed events (one JSON object per line): the messages it was given and the last
/// position it saw.
struct StreamEvents {
    var messageIDs: [String] = []
    var lastPosition = "0"

    init(_ output: String) {
        for line in output.split(separator: "\n") {
            guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                continue
            }
            if let position = event["position"] as? String { lastPosition = position }
            if let added = event["messageAdded"] as? [String: Any] { messageIDs.append(added.string("message.id")) }
        }
    }
}

/// A client writing from a thread of its own through the probe, given every replica's address: each round
/// signs a customer up, books one slot for them and sends one message. A call that fails is tried again
/// with the same key (sign-up by its email, a reservation by its idempotency key, a message by its client
/// id), as an app does; every failure is recorded.
final class MixedWriter: @unchecked Sendable {
    // @unchecked: the mutable state is behind `lock`.
    struct Acknowledged {
        var kind: String
        var id: String
        /// The customer's token (sign-ups and reservations).
        var token: String
        /// What the test had done when it was answered ("", "killed", "restarted").
        var phase: String
    }

    struct Result {
        var acknowledged: [Acknowledged]
        var failures: [String]
    }

    private let probe: @Sendable ([String]) throws -> ProcessResult
    private let addresses: [String: String]
    private let mailFolders: [String]
    private let shop: ReplicatedWritesTestCase.Shop

    private let lock = NSCondition()
    private var acknowledged: [Acknowledged] = []
    private var failures: [String] = []
    private var roundsDone = 0
    private var phase = ""
    private var stopped: String?

    init(
        probe: @escaping @Sendable ([String]) throws -> ProcessResult, addresses: [String: String],
        mailFolders: [String], shop: ReplicatedWritesTestCase.Shop
    ) {
        self.probe = probe
        self.addresses = addresses
        self.mailFolders = mailFolders
        self.shop = shop
    }

    var result: Result { lock.withLock { Result(acknowledged: acknowledged, failures: failures) } }

    var report: String {
        lock.withLock { "\(roundsDone) rounds, stopped: \(stopped ?? "no"), failures: \(failures)" }
    }

    func mark(_ phase: String) { lock.withLock { self.phase = phase } }

    /// Waits until `rounds` rounds are done (false on timeout, or if the writer gave up).
    func wait(forRounds rounds: Int, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while roundsDone < rounds && stopped == nil {
            guard lock.wait(until: deadline) else { return false }
        }
        return roundsDone >= rounds
    }

    func run(rounds: Int) {
        do {
            for round in 0..<rounds {
                try write(round)
                lock.withLock {
                    roundsDone += 1
                    lock.broadcast()
                }
            }
        } catch {
            lock.withLock {
                stopped = "\(error)"
                lock.broadcast()
            }
        }
    }

    private func write(_ round: Int) throws {
        let email = "failover\(round)@example.com"
        let signedUp = try retried("sign-up") { () throws -> [String: Any] in
            let started = try call(
                "account", "yedi.account.AccountService/SignUp",
                #"""
                {"email": "\#(email)", "password": "hair2024!", "name": "고객\#(round)", "phone": "0105556\#(String(format: "%04d", round))",
                 "gender": "GENDER_FEMALE", "birthDate": {"year": 1994, "month": 3, "day": 3}, "role": "ROLE_CUSTOMER"}
                """#)
            let verificationID = started.string("verificationId")
            let code = try mailedCode(verificationID)
            return try call(
                "account", "yedi.account.AccountService/CompleteSignUp",
                #"{"verificationId": "\#(verificationID)", "code": "\#(code)"}"#)
        } orIfDone: {
            // The outcome of a lost answer: signed up if the password signs in.
            try? self.call(
                "account", "yedi.account.AccountService/SignIn", #"{"email": "\#(email)", "password": "hair2024!"}"#)
        }
        let token = signedUp.string("session.accessToken")
        record("sign-up", signedUp.string("user.id"), token: token)
        let reservation = try retried("reservation") {
            try call(
                "booking", "yedi.booking.BookingService/CreateReservation",
                #"{"designerId": "\#(shop.designerID)", "startAtMs": "\#(shop.starts[round])", "styleIds": ["\#(shop.styleID)"], "idempotencyKey": "failover-\#(round)"}"#,
                token: token)
        }
        record("reservation", reservation.string("id"), token: token)
        let message = try retried("message") {
            try call(
                "chat", "yedi.chat.ChatService/SendMessage",
                #"{"roomId": "\#(shop.roomID)", "text": {"text": "메시지 \#(round)"}, "clientMessageId": "failover-\#(round)"}"#,
                token: shop.talkerToken)
        }
        record("message", message.string("id"), token: shop.talkerToken)
    }

    private func record(_ kind: String, _ id: String, token: String) {
        lock.withLock { acknowledged.append(Acknowledged(kind: kind, id: id, token: token, phase: phase)) }
    }

    /// `body`, tried again after a failure (recorded) for up to 90 s (PostgreSQL may be away for a while);
    /// `orIfDone` tells whether a failed attempt took effect after all (its answer was lost).
    private func retried(
        _ what: String, _ body: () throws -> [String: Any], orIfDone: () -> [String: Any]? = { nil }
    ) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(90)
        while true {
            do {
                return try body()
            } catch {
                lock.withLock { failures.append("\(what): \(error)") }
                if let done = orIfDone() { return done }
                guard Date() < deadline else { throw error }
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
    }

    /// The sign-up code, from whichever AccountService replica's outbox wrote the mail (a job leased by
    /// the killed replica is delivered by another once its lease expires).
    private func mailedCode(_ verificationID: String) throws -> String {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            for folder in mailFolders {
                let code = try probe([
                    "sent-mail", "--folder", folder, "--verification-id", verificationID, "--value", "code", "--wait",
                    "0.2",
                ])
                if code.exitCode == 0 { return code.output.trimmingCharacters(in: .whitespacesAndNewlines) }
            }
        }
        throw E2EFailure("no sign-up code for \(verificationID) in 60 s")
    }

    private func call(_ service: String, _ method: String, _ request: String, token: String? = nil) throws
        -> [String: Any]
    {
        let result = try probe(
            ["call", addresses[service]!, method, request, "--emit-defaults"] + (token.map { ["--token", $0] } ?? []))
        guard result.exitCode == 0 else {
            throw E2EFailure(
                "\(method): \(result.errorOutput.split(separator: "\n").first ?? "exit \(result.exitCode)")")
        }
        guard let object = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any] else {
            throw E2EFailure("\(method) answered something that is not a JSON object: \(result.output)")
        }
        return object
    }
}
