import AccessTokens
import ArgumentParser
import BenchSupport
import Foundation
import GRDB
import Histogram
import RPCCore
import ServiceRuntime
import YediProto

/// Zipadoo as it runs (issue 30): the real `BookingService` and `AccountService` executables (found next
/// to this one) with the repository's app files, as child processes on a throwaway dev PKI, over TLS.
///
///     swift build -c release --product BookingService && swift build -c release --product AccountService \
///         && swift build -c release --product zipadoo-bench
///     $(swift build -c release --show-bin-path)/zipadoo-bench
///
/// Prints JSON lines: position writes per second with 2,000 tracking promises × 5 participants (64
/// clients) and, during that load, fix→watcher latency on 50 watched promises; `ListPromises` p50/p99 for
/// a member with 500 promises; the time BookingService takes to settle 10,000 due promises from its start;
/// `ListFriends` p50/p99 for a member with 1,000 friends. Rows are written into the stopped services'
/// databases (their own schema from a first start); tokens are signed with the PKI's key.
@main
struct ZipadooBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "zipadoo-bench",
        abstract: "Zipadoo's position writes, watcher latency, lists and settlement against the real processes.")

    @OptionGroup var pkiOptions: PKIOptions

    @Option(help: "The app files (deploy/apps).")
    var apps = "deploy/apps"

    @Option(help: "Tracking promises, each with --participants participants.")
    var tracking = 2_000

    @Option(help: "Participants per tracking promise (the creator included).")
    var participants = 5

    @Option(help: "Promises watched (one WatchPromise stream each) during the write load.")
    var watched = 50

    @Option(help: "Concurrent writing clients (each its own TLS connection).")
    var clients = 64

    @Option(help: "Seconds each timed run lasts.")
    var seconds = 8.0

    @Option(help: "Promises of the member whose ListPromises is timed.")
    var heavyPromises = 500

    @Option(help: "Due promises settled at start.")
    var due = 10_000

    @Option(help: "Friends of the member whose ListFriends is timed.")
    var friends = 1_000

    @Flag(help: "Keep the temporary folder (PKI, data, the services' logs).")
    var keep = false

    static let latitude = 37.5665, longitude = 126.978

    func run() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent(
            "yedi-zipadoo-bench-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(at: work) } }
        let pki = try pkiOptions.folder(in: work)
        let issuer = AccessTokenIssuer(
            signingKey: try TokenSigningKey.load(pemFile: pki + "/token-signing.key"), lifetime: .seconds(3_600))
        func token(_ user: String) throws -> String {
            try issuer.issue(userID: user, role: "member", sessionID: "s-\(user)", app: "zipadoo").token
        }
        try await booking(work: work, pki: pki, token: token)
        try await account(work: work, pki: pki, token: token)
    }

    // MARK: BookingService

    private func booking(work: URL, pki: String, token: (String) throws -> String) async throws {
        let executable = try ServiceProcess.besideThisExecutable("BookingService")
        let data = work.appendingPathComponent("booking").path
        let arguments = ["--peer", "account=127.0.0.1:\(try ServiceProcess.freePort())", "--apps", apps]
        func start(_ run: Int) async throws -> ServiceProcess {
            try await ServiceProcess.start(
                executable, name: "BookingService", pki: pki, data: data,
                log: work.appendingPathComponent("booking-\(run).log").path, arguments: arguments)
        }
        try await start(1).stop()
        let now = Int64(Date().timeIntervalSince1970 * 1_000)
        try await seedTracking(data + "/booking.sqlite", now: now)
        var process = try await start(2)
        var tokens: [String: String] = [:]
        for promise in 0..<tracking {
            for participant in 0..<participants {
                let user = Self.member(promise, participant)
                tokens[user] = try token(user)
            }
        }
        try await writesAndWatchers(process, tokens: tokens)
        try await listPromises(process, token: try token("zb-heavy"))
        try process.stop()

        try await seedDue(data + "/booking.sqlite", now: now)
        let started = ContinuousClock.now
        process = try await start(3)
        let serving = ContinuousClock.now
        var configuration = Configuration()
        configuration.readonly = true
        let database = try DatabasePool(path: data + "/booking.sqlite", configuration: configuration)
        while try await database.read({ db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM promise WHERE id LIKE 'zd-%' AND settled_at_ms IS NULL")
                ?? 0
        }) > 0 {
            try await Task.sleep(for: .milliseconds(20))
        }
        let done = ContinuousClock.now
        try database.close()
        try process.stop()
        print(
            #"{"bench":"zipadoo-settle","due":\#(due),"participants":3,"#
                + #""seconds_from_launch":\#(Figures.format(Figures.seconds(done - started))),"#
                + #""seconds_from_serving":\#(Figures.format(Figures.seconds(done - serving))),"#
                + #""per_second":\#(Figures.format(Double(due) / Figures.seconds(done - serving)))}"#)
    }

    static func member(_ promise: Int, _ participant: Int) -> String { "zb-\(promise)-\(participant)" }

    /// Tracking promises (T = now + 10 min: tracking for the next 3 h 10 min) and the heavy member's
    /// upcoming ones (from tomorrow), each with its participants.
    private func seedTracking(_ path: String, now: Int64) async throws {
        let database = try DatabaseQueue(path: path)
        defer { try? database.close() }
        try await database.write { [tracking, participants, heavyPromises] db in
            for promise in 0..<tracking {
                try Self.insert(
                    "zp-\(promise)", at: now + 10 * 60_000, users: (0..<participants).map { Self.member(promise, $0) },
                    now: now, db)
            }
            for promise in 0..<heavyPromises {
                try Self.insert(
                    "zh-\(promise)", at: now + 86_400_000 + Int64(promise) * 60_000,
                    users: ["zb-heavy"] + (1..<5).map { "zb-heavy-friend-\($0)" }, now: now, db)
            }
        }
    }

    /// Promises whose settlement is due (T = 3 h 10 min ago), each with 3 participants, the first arrived
    /// on time, and their scheduler jobs.
    private func seedDue(_ path: String, now: Int64) async throws {
        let database = try DatabaseQueue(path: path)
        defer { try? database.close() }
        let scheduler = Scheduler(clock: SystemClock())
        let at = now - 190 * 60_000
        try await database.write { [due] db in
            for promise in 0..<due {
                let id = "zd-\(promise)"
                try Self.insert(id, at: at, users: (0..<3).map { "zd-user-\((promise + $0) % 1_000)" }, now: now, db)
                try db.execute(
                    sql:
                        "UPDATE promise_participant SET arrived_at_ms = ?, arrival_rank = 1 WHERE promise_id = ? AND position = 0",
                    arguments: [at, id])
                _ = try scheduler.schedule(
                    ScheduledJob(
                        id: "promise-settlement:\(id)", kind: "zipadoo-promise-settlement", subject: id,
                        dueAtMilliseconds: at + 180 * 60_000),
                    in: db)
            }
        }
    }

    static func insert(_ id: String, at: Int64, users: [String], now: Int64, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO promise (id, creator_id, client_id, title, at_ms, place_name, place_address, latitude,
                    longitude, fee, created_at_ms)
                VALUES (?, ?, ?, '벤치', ?, '시청', '서울 중구', ?, ?, 100, ?)
                """,
            arguments: [id, users[0], "c-\(id)", at, latitude, longitude, now])
        for (position, user) in users.enumerated() {
            try db.execute(
                sql: "INSERT INTO promise_participant (promise_id, user_id, position) VALUES (?, ?, ?)",
                arguments: [id, user, position])
        }
    }

    /// 64 clients report positions round-robin over every participant (each one at most every few seconds,
    /// well inside the one-a-second rule), 1 km from the destination; meanwhile one stream per watched
    /// promise measures from the moment a fix is sent to the moment its watcher receives it.
    private func writesAndWatchers(_ process: ServiceProcess, tokens: [String: String]) async throws {
        let sent = SendTimes()
        let next = Counter()
        let total = tracking * participants
        let watchedCount = min(watched, tracking)
        let watchers = Task {
            try await withThrowingTaskGroup(of: Histogram<UInt64>.self) { group in
                for promise in 0..<watchedCount {
                    let token = tokens[Self.member(promise, 0)]!
                    group.addTask {
                        var histogram = Figures.newHistogram()
                        do {
                            try await withRPCClient(configuration: process.clientConfiguration()) { connection in
                                try await YediZipadoo.Promises.Client(connection).watchPromise(
                                    .init(promiseID: "zp-\(promise)"),
                                    options: CallOptions(
                                        timeout: .seconds(600), metadata: ["authorization": "Bearer \(token)"])
                                ) { stream in
                                    for try await event in stream {
                                        guard case .moved(let position) = event.event,
                                            let start = await sent.take("\(position.userID)|\(position.latitude)")
                                        else { continue }
                                        histogram.record(Figures.nanoseconds(ContinuousClock.now - start))
                                    }
                                }
                            }
                        } catch is CancellationError {
                        } catch let error as RPCError where error.code == .cancelled {
                        } catch {}
                        return histogram
                    }
                }
                var merged = Figures.newHistogram()
                for try await histogram in group { merged.add(histogram) }
                return merged
            }
        }
        try await Task.sleep(for: .seconds(1))
        let end = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        let start = ContinuousClock.now
        let (histogram, refused) = try await withThrowingTaskGroup(of: (Histogram<UInt64>, Int).self) { group in
            for _ in 0..<clients {
                group.addTask { [participants, watched] in
                    try await withRPCClient(configuration: process.clientConfiguration()) { connection in
                        let promises = YediZipadoo.Promises.Client(connection)
                        var histogram = Figures.newHistogram()
                        var refused = 0
                        while ContinuousClock.now < end {
                            let index = await next.take()
                            let promise = (index % total) / participants
                            let user = Self.member(promise, index % participants)
                            // 1 km north, a little further each round: every fix is a different point.
                            let latitude = Self.latitude + 0.009 + Double(index / total) * 1e-6
                            let callStart = ContinuousClock.now
                            if promise < watched { await sent.put("\(user)|\(latitude)", callStart) }
                            do {
                                _ = try await promises.reportPosition(
                                    .init(promiseID: "zp-\(promise)", latitude: latitude, longitude: Self.longitude),
                                    options: CallOptions(
                                        timeout: .seconds(30), metadata: ["authorization": "Bearer \(tokens[user]!)"]))
                                histogram.record(Figures.nanoseconds(ContinuousClock.now - callStart))
                            } catch {
                                refused += 1
                            }
                        }
                        return (histogram, refused)
                    }
                }
            }
            var merged = Figures.newHistogram()
            var refused = 0
            for try await (histogram, count) in group {
                merged.add(histogram)
                refused += count
            }
            return (merged, refused)
        }
        let elapsed = Figures.seconds(ContinuousClock.now - start)
        try await Task.sleep(for: .seconds(1))
        watchers.cancel()
        let latency = try await watchers.value
        print(
            #"{"bench":"zipadoo-report-position","tracking_promises":\#(tracking),"participants":\#(participants),"#
                + #""clients":\#(clients),"writes":\#(histogram.totalCount),"refused":\#(refused),"#
                + #""per_second":\#(Figures.format(Double(histogram.totalCount) / elapsed)),"#
                + #""p50_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(50))),"#
                + #""p99_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(99))),"tls":true}"#)
        print(
            #"{"bench":"zipadoo-fix-to-watcher","watched_promises":\#(watched),"samples":\#(latency.totalCount),"#
                + #""p50_ms":\#(Figures.milliseconds(latency.valueAtPercentile(50))),"#
                + #""p99_ms":\#(Figures.milliseconds(latency.valueAtPercentile(99))),"tls":true}"#)
    }

    /// One client, one call at a time: the heavy member's upcoming promises (200 of 500, each with 5
    /// participants).
    private func listPromises(_ process: ServiceProcess, token: String) async throws {
        let histogram = try await timedCalls(process) { [heavyPromises] connection in
            let answer = try await YediZipadoo.Promises.Client(connection).listPromises(
                .init(window: .upcoming),
                options: CallOptions(timeout: .seconds(30), metadata: ["authorization": "Bearer \(token)"]))
            precondition(answer.promises.count == min(200, heavyPromises), "\(answer.promises.count) promises")
        }
        print(
            #"{"bench":"zipadoo-list-promises","promises":\#(heavyPromises),"returned":\#(min(200, heavyPromises)),"#
                + #""calls":\#(histogram.totalCount),"#
                + #""p50_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(50))),"#
                + #""p99_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(99))),"tls":true}"#)
    }

    private func timedCalls(
        _ process: ServiceProcess, _ call: @escaping @Sendable (RPCClient) async throws -> Void
    ) async throws -> Histogram<UInt64> {
        let end = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        return try await withRPCClient(configuration: process.clientConfiguration()) { connection in
            var histogram = Figures.newHistogram()
            while ContinuousClock.now < end {
                let callStart = ContinuousClock.now
                try await call(connection)
                histogram.record(Figures.nanoseconds(ContinuousClock.now - callStart))
            }
            return histogram
        }
    }

    // MARK: AccountService

    private func account(work: URL, pki: String, token: (String) throws -> String) async throws {
        let executable = try ServiceProcess.besideThisExecutable("AccountService")
        let data = work.appendingPathComponent("account").path
        let nowhere = try ServiceProcess.freePort()
        let arguments =
            ["content", "booking", "chat"].flatMap { ["--peer", "\($0)=127.0.0.1:\(nowhere)"] } + ["--apps", apps]
        func start(_ run: Int) async throws -> ServiceProcess {
            try await ServiceProcess.start(
                executable, name: "AccountService", pki: pki, data: data,
                log: work.appendingPathComponent("account-\(run).log").path, arguments: arguments)
        }
        try await start(1).stop()
        let database = try DatabaseQueue(path: data + "/account.sqlite")
        let now = Int64(Date().timeIntervalSince1970 * 1_000)
        try await database.write { [friends] db in
            for index in 0...friends {
                let id = index == 0 ? "zb-popular" : String(format: "zb-friend-%05d", index)
                try db.execute(
                    sql: """
                        INSERT INTO user (id, role, app, email, name, phone, gender, created_at_ms, nickname)
                        VALUES (?, 'member', 'zipadoo', ?, '이름', '01012345678', 0, ?, ?)
                        """,
                    arguments: [id, "\(id)@bench.zipadoo", now, "f\(index)"])
                try db.execute(
                    sql: "INSERT INTO zipadoo_member (user_id, mole) VALUES (?, 'doo1')", arguments: [id])
                if index > 0 {
                    let (low, high) = id < "zb-popular" ? (id, "zb-popular") : ("zb-popular", id)
                    try db.execute(
                        sql: """
                            INSERT INTO zipadoo_friendship (user_low, user_high, requester_id, created_at_ms, accepted_at_ms)
                            VALUES (?, ?, ?, ?, ?)
                            """,
                        arguments: [low, high, id, now, now])
                }
            }
        }
        try database.close()
        let process = try await start(2)
        defer { try? process.stop() }
        let popular = try token("zb-popular")
        let histogram = try await timedCalls(process) { [friends] connection in
            let answer = try await YediZipadoo.Friends.Client(connection).listFriends(
                .init(), options: CallOptions(timeout: .seconds(30), metadata: ["authorization": "Bearer \(popular)"]))
            precondition(answer.friends.count == friends, "\(answer.friends.count) friends")
        }
        print(
            #"{"bench":"zipadoo-list-friends","friends":\#(friends),"calls":\#(histogram.totalCount),"#
                + #""p50_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(50))),"#
                + #""p99_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(99))),"tls":true}"#)
    }
}

/// When each watched fix was sent, until its watcher takes it.
actor SendTimes {
    private var times: [String: ContinuousClock.Instant] = [:]

    func put(_ key: String, _ instant: ContinuousClock.Instant) { times[key] = instant }

    func take(_ key: String) -> ContinuousClock.Instant? { times.removeValue(forKey: key) }
}

/// Hands out increasing numbers.
actor Counter {
    private var next = 0

    func take() -> Int {
        defer { next += 1 }
        return next
    }
}
