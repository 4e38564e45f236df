import RPCCore
import ServiceRuntime

/// What BookingService keeps, behind a protocol so handlers never see SQL and a second engine
/// (PostgreSQL) can run the same contract tests (`BookingStoreContract`).
///
/// No double booking is the store's job: a reservation holds every 5-minute cell of its time
/// ([start, end)) as a row unique per (designer, cell start), inserted in the reservation's transaction,
/// so two overlapping confirmed reservations of one designer cannot both commit, whatever their lengths.
protocol BookingStore: Sendable {
    // MARK: Schedules and menus

    func schedule(designerID: String) async throws -> ScheduleRecord?
    /// Stores a new designer's schedule and menu unless a schedule exists; answers the stored schedule.
    func createDesigner(_ schedule: ScheduleRecord, menu: [StyleRecord]) async throws -> ScheduleRecord
    func updateSchedule(_ schedule: ScheduleRecord) async throws
    /// Closed dates in [from, through], ascending.
    func closedDays(designerID: String, from: LocalDay, through: LocalDay) async throws -> [LocalDay]
    func updateClosedDays(designerID: String, add: [LocalDay], remove: [LocalDay]) async throws
    /// In display order.
    func menu(designerID: String) async throws -> [StyleRecord]
    func replaceMenu(designerID: String, styles: [StyleRecord]) async throws

    // MARK: Reservations

    /// Everything CreateReservation checks a request against, read in one transaction (one round trip
    /// before the reserving write): see `BookingSetting`.
    func bookingSetting(
        designerID: String, closedFrom: LocalDay, through: LocalDay, customerID: String, idempotencyKey: String?
    ) async throws -> BookingSetting
    /// The designer's confirmed bookings that overlap [from, until).
    func bookedTimes(designerID: String, from: Int64, until: Int64) async throws -> BookedTimes
    /// Inserts `reservation` (confirmed), holding its time, or answers the customer's reservation with the
    /// same idempotency key. Throws `BookingStoreError.slotTaken` when the time is held, and `QuotaExceeded`
    /// when the customer is at one of `quotas` (counted in the same transaction as the insert).
    func reserve(_ reservation: ReservationRecord, quotas: ReservationQuotas?) async throws
        -> ReserveOutcome
    func reservation(id: String) async throws -> ReservationRecord?
    /// Marks a confirmed reservation cancelled and frees its cells; answers the reservation as stored
    /// afterwards (nil when unknown).
    func cancel(id: String, at milliseconds: Int64) async throws -> ReservationRecord?
    /// One page (`limit` rows) of a user's reservations, after `position`.
    func reservations(
        of party: ReservationParty, filter: ReservationListFilter, now: Int64, after position: ReservationPosition?,
        limit: Int
    ) async throws -> [ReservationRecord]
    /// A designer's confirmed reservations starting in [from, until), by start.
    func designerReservations(designerID: String, from: Int64, until: Int64) async throws -> [ReservationRecord]

    // MARK: Deletion

    /// Removes the user's reservations (as customer and as designer) and their schedule and menu, once
    /// per outbox delivery: the delivery is recorded in the same transaction (the runtime's receipt
    /// ledger); a redelivery changes nothing and answers false.
    func purgeUser(_ userID: String, delivery: Delivery, now: Int64) async throws -> Bool
}

extension BookingStore {
    /// Without quotas (store tests about booking itself).
    func reserve(_ reservation: ReservationRecord) async throws -> ReserveOutcome {
        try await reserve(reservation, quotas: nil)
    }
}

/// A customer's reservation quotas: upcoming (confirmed, not started) at once, and made per Seoul day
/// (cancelled ones count: cancelling does not give the day's quota back).
struct ReservationQuotas: Sendable {
    var open: Quota
    var perDay: Quota
}
