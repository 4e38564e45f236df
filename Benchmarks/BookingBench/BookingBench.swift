import AccessTokens
import ArgumentParser
import BenchSupport
import Foundation
import GRDB
import Histogram
import Logging
import RPCCore
import YediProto

/// BookingService as it runs: the real `BookingService` executable (found next to this one) as a child
/// process on a throwaway dev PKI, called over TLS.
///
///     swift build -c release --product BookingService && swift build -c release --product booking-bench
///     $(swift build -c release --show-bin-path)/booking-bench
///
/// Prints JSON lines: ListFreeSlots latency (p50/p99) over a 31-day range of a designer with 300
/// reservations in it, and reservations per second with 64 clients (each its own TLS connection and
/// customer) contending for 16 slots per round (exactly 16 succeed per round, the rest are ALREADY_EXISTS).
///
/// Then payments with the development provider: `payments` seeded reservations are prepared, and their
/// ConfirmPayment calls (`payment-clients` customers at once) give payments confirmed per second and the
/// call's p50/p99 (docs/payments.md, "Bench").
///
/// Designers' schedules, menus and the 300 reservations are written into the stopped service's own
/// `booking-1` schema first (checked), so AccountService is never needed.
///
/// `--postgres` runs the same on PostgreSQL (docs/postgres.md): a fresh database on the development server
/// (`deploy/postgres-dev.sh --test`), migrated by the service's first start, seeded with the same rows,
/// dropped at the end; `--replicas N` starts N BookingService processes on it, and the race's and the
/// payments' clients spread over them (client i on replica i mod N). Each line names its engine and
/// replicas. `--failover` (PostgreSQL, 2 or more replicas) measures a replica's death instead
/// (BookingFailover.swift).
@main
struct BookingBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "booking-bench",
        abstract: "Free slots over 31 days p50/p99 and contended reservations/s against the BookingService process."
    )

    @Option(help: "The BookingService executable (default: next to this one).")
    var service: String?

    @OptionGroup var pkiOptions: PKIOptions

    @Option(help: "Reservations seeded into the free-slot designer's 31 days (12 slots a day: at most 372).")
    var reservations = 300

    @Option(help: "Measured ListFreeSlots calls.")
    var queries = 500

    @Option(help: "Concurrent clients in the reservation race.")
    var clients = 64

    @Option(help: "Slots per round of the reservation race.")
    var slots = 16

    @Option(help: "Seconds the reservation race lasts.")
    var raceSeconds = 10.0

    @Option(help: "Reservations seeded for the payment bench (each prepared, then confirmed).")
    var payments = 2_000

    @Option(help: "Concurrent customers confirming payments.")
    var paymentClients = 16

    @Flag(help: "On PostgreSQL: a fresh database on the development server (deploy/postgres-dev.sh --test).")
    var postgres = false

    @Option(help: "BookingService processes on the one PostgreSQL database; the clients spread over them.")
    var replicas = 1

    @OptionGroup var failoverOptions: FailoverOptions

    @Option(help: "With --failover: customers reserving at once, each its own designer's slots.")
    var failoverCustomers = 16

    @Flag(help: "Keep the temporary folder (PKI, data, the service's log).")
    var keep = false

    static let freeSlotDesigner = "bench-designer-slots"
    static let raceDesigner = "bench-designer-race"
    static let paymentDesigner = "bench-designer-pay"

    func run() async throws {
        guard replicas >= 1, postgres || replicas == 1 else { throw BenchError("--replicas above 1 needs --postgres") }
        try failoverOptions.check(postgres: postgres, replicas: replicas)
        guard payments <= 360 * 12 else { throw BenchError("at most \(360 * 12) payments") }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent(
            "yedi-booking-bench-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(at: work) } }
        try await BenchPostgres.with(postgres) { try await measure(in: work, database: $0) }
    }

    /// The JSON fields every line starts with: which engine, how many processes.
    var engineFields: String { BenchPostgres.engineField(postgres: postgres) + #""replicas":\#(replicas),"# }

    private func measure(in work: URL, database: BenchPostgres?) async throws {
        let pkiDirectory = try pkiOptions.folder(in: work)
        let executable = try service ?? ServiceProcess.besideThisExecutable("BookingService")

        // 1. Start once so the service creates its schema, then stop it. 2. Seed. 3. Start for the figures.
        // AccountService on a port nothing listens on: the seeded designers never need it.
        // Each bench client books hundreds of slots: the per-customer quotas would stop the race early.
        var arguments = [
            "--peer", "account=127.0.0.1:\(try ServiceProcess.freePort())",
            "--quota", "reservations.open=1000000", "--quota", "reservations.day=1000000",
        ]
        if let database { arguments += database.replicaArguments(sharingKeysIn: work) }
        let data = { (replica: Int) in work.appendingPathComponent("data-\(replica)").path }
        let first = try await ServiceProcess.start(
            executable, name: "BookingService", pki: pkiDirectory, data: data(0),
            log: work.appendingPathComponent("service-migrate.log").path, arguments: arguments)
        try first.stop()
        let (tomorrow, rows) = seedRows()
        if let database {
            try await rows.apply(to: database)
        } else {
            try rows.apply(toSQLite: data(0) + "/booking.sqlite")
        }
        let startReplica = ServiceProcess.replicaStarter(
            executable, name: "BookingService", pki: pkiDirectory, work: work, arguments: arguments)
        let processes = ProcessList()
        defer { processes.stopAll() }
        for replica in 0..<replicas { processes.append(try await startReplica(replica, nil, "")) }

        let issuer = AccessTokenIssuer(
            signingKey: try TokenSigningKey.load(pemFile: pkiDirectory + "/token-signing.key"),
            lifetime: .seconds(3_600), now: { Date() })
        if failoverOptions.failover, let database {
            try await measureFailover(
                processes: processes, restart: { try await startReplica(0, $0, "-restarted") }, issuer: issuer,
                from: tomorrow, database: database)
            return
        }
        try await freeSlots(processes[0], from: tomorrow)
        try await race(processes.all, issuer: issuer, from: tomorrow)
        try await confirmPayments(processes.all, issuer: issuer)
    }

    // MARK: Seed

    /// Tomorrow in Seoul, as (year, month, day) and its midnight in Unix milliseconds.
    struct Day {
        let year: Int32
        let month: Int32
        let day: Int32
        let midnight: Int64
    }

    /// Both designers' schedules (09:00–21:00 Seoul, 60-minute slots) and menus, `reservations`
    /// reservations spread over the free-slot designer's next 31 days, and the payment bench's
    /// reservations; answers tomorrow (Seoul) and the rows.
    private func seedRows() -> (Day, SeedBatch) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Asia/Seoul")!
        let midnight = calendar.date(byAdding: .day, value: 1, to: calendar.startOfDay(for: Date()))!
        let parts = calendar.dateComponents([.year, .month, .day], from: midnight)
        let tomorrow = Day(
            year: Int32(parts.year!), month: Int32(parts.month!), day: Int32(parts.day!),
            midnight: Int64(midnight.timeIntervalSince1970 * 1_000))
        let hour: Int64 = 3_600_000
        let starts = Self.slotStarts(from: tomorrow.midnight, days: 31)
        var random = SplitMix64(seed: 12)
        var chosen = starts
        for index in chosen.indices.reversed() {
            chosen.swapAt(index, Int(random.next() % UInt64(index + 1)))
        }
        let booked = Array(chosen.prefix(min(reservations, starts.count)))
        var rows = SeedBatch(version: "booking-1")
        let failoverDesigners = failoverOptions.failover ? (0..<failoverCustomers).map(Self.failoverDesigner) : []
        for designer in [Self.freeSlotDesigner, Self.raceDesigner, Self.paymentDesigner] + failoverDesigners {
            rows.add(
                """
                INSERT INTO schedule (designer_id, opening_minute, closing_minute, slot_minutes, time_zone,
                    breaks, closed_weekdays, updated_at_ms) VALUES (?, 540, 1260, 60, 'Asia/Seoul', '[]', '', 0)
                """, [.text(designer)])
            rows.add(
                """
                INSERT INTO style (id, designer_id, position, name, category, price_krw, duration_minutes)
                VALUES (?, ?, 0, '레이어드컷', 1, 45000, 60)
                """, [.text("style-\(designer)"), .text(designer)])
        }
        let styles = #"[{"id":"style-x","name":"레이어드컷","category":1,"priceKRW":45000,"durationMinutes":60}]"#
        for (index, start) in booked.enumerated() {
            let id = "seed-\(index)"
            rows.add(
                """
                INSERT INTO reservation (id, customer_id, designer_id, start_at_ms, end_at_ms, time_zone, styles,
                    total_price_krw, status, created_at_ms) VALUES (?, ?, ?, ?, ?, 'Asia/Seoul', ?, 45000,
                    'confirmed', 0)
                """,
                [
                    .text(id), .text("seed-customer-\(index % 50)"), .text(Self.freeSlotDesigner), .integer(start),
                    .integer(start + hour), .text(styles),
                ])
            for cell in stride(from: start, to: start + hour, by: 300_000) {
                rows.add(
                    "INSERT INTO booked_cell (designer_id, cell_start_ms, reservation_id) VALUES (?, ?, ?)",
                    [.text(Self.freeSlotDesigner), .integer(cell), .text(id)])
            }
        }
        seedPayable(&rows, from: tomorrow.midnight)
        return (tomorrow, rows)
    }

    // MARK: Free slots

    private func freeSlots(_ process: ServiceProcess, from tomorrow: Day) async throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Asia/Seoul")!
        let last = calendar.dateComponents(
            [.year, .month, .day],
            from: Date(timeIntervalSince1970: TimeInterval(tomorrow.midnight / 1_000) + 30 * 86_400 + 43_200))
        let request = YediBooking.ListFreeSlotsRequest(
            designerID: Self.freeSlotDesigner,
            from: .init(year: tomorrow.year, month: tomorrow.month, day: tomorrow.day),
            to: .init(year: Int32(last.year!), month: Int32(last.month!), day: Int32(last.day!)))
        try await withRPCClient(configuration: process.clientConfiguration()) { client in
            let booking = YediBooking.BookingService.Client(client)
            var histogram = Figures.newHistogram()
            var free = 0
            for index in 0..<(queries + 20) {
                let start = ContinuousClock.now
                let answer = try await booking.listFreeSlots(request, options: CallOptions(timeout: .seconds(30)))
                if index >= 20 {  // the first ones warm the caches
                    histogram.record(Figures.nanoseconds(ContinuousClock.now - start))
                    free = answer.days.reduce(0) { $0 + $1.freeStartAtMs.count }
                }
            }
            print(
                #"{"bench":"free-slots",\#(engineFields)"days":31,"reservations":\#(reservations),"free_slots":\#(free),"#
                    + #""calls":\#(histogram.totalCount),"p50_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(50))),"#
                    + #""p99_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(99))),"tls":true}"#)
        }
    }

    // MARK: Reservation race

    /// Rounds of `slots` fresh slots of the race designer; in each, every client tries every slot in its
    /// own random order. Answers/s counts every attempt (OK or ALREADY_EXISTS), booked/s the successes.
    private func race(_ processes: [ServiceProcess], issuer: AccessTokenIssuer, from tomorrow: Day) async throws {
        let allSlots = Self.slotStarts(from: tomorrow.midnight, days: 360)
        let options = try (0..<clients).map { try Self.customer("bench-customer-\($0)", issuer: issuer) }
        // Client i on replica i mod N: every round, every replica's clients race for the same slots.
        let rpcClients = try (0..<clients).map {
            try RPCClient(configuration: processes[$0 % processes.count].clientConfiguration())
        }
        let tasks = rpcClients.map { client in Task { await client.run() } }
        defer {
            for client in rpcClients { client.beginGracefulShutdown() }
        }
        for client in rpcClients {
            _ = try await YediBooking.BookingService.Client(client).getSchedule(.init(designerID: Self.raceDesigner))
        }
        let style = "style-\(Self.raceDesigner)"
        var histogram = Figures.newHistogram()
        var booked = 0
        var taken = 0
        var rounds = 0
        let started = ContinuousClock.now
        let end = started + .milliseconds(Int(raceSeconds * 1_000))
        while ContinuousClock.now < end, (rounds + 1) * slots <= allSlots.count {
            let round = Array(allSlots[(rounds * slots)..<((rounds + 1) * slots)])
            let results = try await withThrowingTaskGroup(of: (Histogram<UInt64>, Int, Int).self) { group in
                for index in 0..<clients {
                    let booking = YediBooking.BookingService.Client(rpcClients[index])
                    let callOptions = options[index]
                    let order = round.shuffled()
                    group.addTask {
                        var histogram = Figures.newHistogram()
                        var ok = 0
                        var taken = 0
                        for start in order {
                            let callStart = ContinuousClock.now
                            do {
                                _ = try await booking.createReservation(
                                    .init(designerID: Self.raceDesigner, startAtMs: start, styleIDs: [style]),
                                    options: callOptions)
                                ok += 1
                            } catch let error as RPCError where error.code == .alreadyExists {
                                taken += 1
                            }
                            histogram.record(Figures.nanoseconds(ContinuousClock.now - callStart))
                        }
                        return (histogram, ok, taken)
                    }
                }
                var merged = (Figures.newHistogram(), 0, 0)
                for try await result in group {
                    merged.0.add(result.0)
                    merged.1 += result.1
                    merged.2 += result.2
                }
                return merged
            }
            guard results.1 == slots else {
                throw BenchError("round \(rounds): \(results.1) reservations succeeded for \(slots) slots")
            }
            histogram.add(results.0)
            booked += results.1
            taken += results.2
            rounds += 1
        }
        let elapsed = Figures.seconds(ContinuousClock.now - started)
        print(
            #"{"bench":"reserve-contended",\#(engineFields)"clients":\#(clients),"slots_per_round":\#(slots),"rounds":\#(rounds),"#
                + #""answers_per_second":\#(Figures.format(Double(booked + taken) / elapsed)),"#
                + #""reservations_per_second":\#(Figures.format(Double(booked) / elapsed)),"already_exists":\#(taken),"#
                + #""p50_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(50))),"#
                + #""p99_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(99))),"tls":true}"#)
        for client in rpcClients { client.beginGracefulShutdown() }
        for task in tasks { await task.value }
    }

    /// Call options of a bench customer: a token from the bench's issuer, a generous deadline.
    static func customer(_ userID: String, issuer: AccessTokenIssuer) throws -> CallOptions {
        CallOptions(
            timeout: .seconds(30),
            metadata: [
                "authorization":
                    "Bearer \(try issuer.issue(userID: userID, role: .customer, sessionID: "s-\(userID)").token)"
            ])
    }

    /// Hour slots 09–20 of `days` days from `midnight` (Seoul has no DST: a day is 24 hours).
    static func slotStarts(from midnight: Int64, days: Int) -> [Int64] {
        let hour: Int64 = 3_600_000
        var starts: [Int64] = []
        for day in 0..<days {
            let dayStart: Int64 = midnight + Int64(day) * 24 * hour
            for slot in 9..<21 { starts.append(dayStart + Int64(slot) * hour) }
        }
        return starts
    }

}
