import AccessTokens
import BenchSupport
import Foundation
import PostgresNIO
import RPCCore
import Synchronization
import YediProto

/// `--failover`: a BookingService replica's death under reservations, as issue 31 asks it measured
/// (`chat-bench --failover` does the same for ChatService; both run on `FailoverRun`).
///
/// Each of `failover-customers` customers books its own designer's slots one after another through a
/// client spread over every replica (the client's own balancing, ejection and health watch), each
/// reservation with an idempotency key of its own. A failed call is made again with the same key, as an
/// app does: if the first attempt was stored, the retry is answered with that reservation. Replica 0 gets
/// SIGKILL after a phase and is restarted after another. Then the database is read.
///
/// The `failover` line: the workers' figures (`FailoverWorkers`), reservations acknowledged, those missing
/// from the database (lost), those stored but never acknowledged (the run stopped before their retry was
/// answered), retries answered ALREADY_EXISTS (an idempotency key that did not find its own reservation:
/// should be 0), the restart's time to SERVING and the CPU split.
extension BookingBench {
    static func failoverDesigner(_ customer: Int) -> String { "bench-designer-fail-\(customer)" }

    func measureFailover(
        processes: ProcessList, restart: (Int) async throws -> ServiceProcess, issuer: AccessTokenIssuer,
        from tomorrow: Day, database: BenchPostgres
    ) async throws {
        let customers = failoverCustomers
        let options = try (0..<customers).map { try Self.customer("bench-fail-customer-\($0)", issuer: issuer) }
        let client = try RPCClient(configuration: ServiceProcess.clientConfiguration(spreadingOver: processes.all))
        let clientTask = Task { await client.run() }
        defer { client.beginGracefulShutdown() }
        let booking = YediBooking.BookingService.Client(client)
        let slots = Self.slotStarts(from: tomorrow.midnight, days: 360)
        let workers = FailoverWorkers(count: customers)
        let ledger = ReservationLedger()

        let run = try await FailoverRun.measure(
            processes: processes, restart: restart, phase: failoverOptions.phase, workers: workers
        ) {
            await withTaskGroup(of: Void.self) { group in
                for customer in 0..<customers {
                    group.addTask {
                        let designer = Self.failoverDesigner(customer)
                        for (number, start) in slots.enumerated() {
                            if workers.isStopped { return }
                            let request = YediBooking.CreateReservationRequest(
                                designerID: designer, startAtMs: start, styleIDs: ["style-\(designer)"],
                                idempotencyKey: "f\(customer)-\(number)")
                            var retry = false
                            while !workers.isStopped {
                                do {
                                    let reservation = try await booking.createReservation(
                                        request, options: options[customer])
                                    workers.succeeded(customer)
                                    ledger.acknowledged(reservation.id)
                                    break
                                } catch let error as RPCError where error.code == .alreadyExists && retry {
                                    // Not a failure of the kill's: an idempotency key that missed its own
                                    // reservation, counted on its own.
                                    ledger.takenOnRetry()
                                    break
                                } catch {
                                    workers.failed(customer, error)
                                    retry = true
                                    try? await Task.sleep(for: .milliseconds(20))
                                }
                            }
                        }
                    }
                }
            }
        }
        client.beginGracefulShutdown()
        await clientTask.value

        let stored = try await storedReservations(database, customers: customers)
        let (acknowledged, takenOnRetry) = ledger.figures
        print(
            #"{"bench":"failover",\#(engineFields)"service":"BookingService","killed":"replica 0","#
                + #""phase_s":\#(failoverOptions.failoverPhaseSeconds),"customers":\#(customers),"#
                + workers.fields(noun: "customers")
                + #""acknowledged":\#(acknowledged.count),"acknowledged_lost":\#(acknowledged.subtracting(stored).count),"#
                + #""stored_unacknowledged":\#(stored.subtracting(acknowledged).count),"#
                + #""retries_answered_taken":\#(takenOnRetry),"#
                + run.fields + #""reservations_per_second":\#(run.rate(acknowledged.count)),"tls":true}"#)
    }

    /// The ids of the reservations the failover customers' designers hold in the database.
    private func storedReservations(_ database: BenchPostgres, customers: Int) async throws -> Set<String> {
        let connection = try await database.connect()
        do {
            let designers = (0..<customers).map(Self.failoverDesigner)
            let rows = try await connection.query(
                "SELECT id FROM reservation WHERE designer_id = ANY(\(designers))", logger: BenchPostgres.logger)
            var ids = Set<String>()
            for try await id in rows.decode(String.self) { ids.insert(id) }
            try await connection.close()
            return ids
        } catch {
            try? await connection.close()
            throw error
        }
    }
}

/// The failover run's acknowledged reservations and the retries answered ALREADY_EXISTS, from many tasks.
final class ReservationLedger: Sendable {
    private let state = Mutex<(acknowledged: Set<String>, takenOnRetry: Int)>(([], 0))

    func acknowledged(_ id: String) { state.withLock { _ = $0.acknowledged.insert(id) } }
    func takenOnRetry() { state.withLock { $0.takenOnRetry += 1 } }
    var figures: (acknowledged: Set<String>, takenOnRetry: Int) { state.withLock { $0 } }
}
