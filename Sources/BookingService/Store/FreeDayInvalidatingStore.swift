import RPCCore
import ServiceRuntime

/// A `BookingStore` that tells the `FreeDayCache` about every change free slots depend on, after the
/// change commits. Being a store, it sees every write, whichever handler (or outbox delivery) makes it:
/// a new write method of the protocol must be forwarded here, so it cannot be forgotten.
struct FreeDayInvalidatingStore: BookingStore {
    let inner: any BookingStore
    let cache: FreeDayCache

    // MARK: Writes: invalidate after the call, also when it threw (it may have committed first)

    func createDesigner(_ schedule: ScheduleRecord, menu: [StyleRecord]) async throws -> ScheduleRecord {
        defer { cache.invalidate(schedule.designerID) }
        return try await inner.createDesigner(schedule, menu: menu)
    }

    func updateSchedule(_ schedule: ScheduleRecord) async throws {
        defer { cache.invalidate(schedule.designerID) }
        try await inner.updateSchedule(schedule)
    }

    func updateClosedDays(designerID: String, add: [LocalDay], remove: [LocalDay]) async throws {
        defer { cache.invalidate(designerID) }
        try await inner.updateClosedDays(designerID: designerID, add: add, remove: remove)
    }

    func replaceMenu(designerID: String, styles: [StyleRecord]) async throws {
        // The menu does not change which slots are free.
        try await inner.replaceMenu(designerID: designerID, styles: styles)
    }

    func reserve(_ reservation: ReservationRecord, quotas: ReservationQuotas?) async throws -> ReserveOutcome {
        defer { cache.invalidate(reservation.designerID) }
        return try await inner.reserve(reservation, quotas: quotas)
    }

    func cancel(id: String, at milliseconds: Int64) async throws -> ReservationRecord? {
        do {
            let cancelled = try await inner.cancel(id: id, at: milliseconds)
            if let cancelled { cache.invalidate(cancelled.designerID) }
            return cancelled
        } catch {
            cache.invalidateAll()  // whose slots it freed, if it did, is not known
            throw error
        }
    }

    func purgeUser(_ userID: String, delivery: Delivery, now: Int64) async throws -> Bool {
        // As customer, the user's reservations held other designers' slots.
        defer { cache.invalidateAll() }
        return try await inner.purgeUser(userID, delivery: delivery, now: now)
    }

    // MARK: Reads

    func schedule(designerID: String) async throws -> ScheduleRecord? {
        try await inner.schedule(designerID: designerID)
    }

    func closedDays(designerID: String, from: LocalDay, through: LocalDay) async throws -> [LocalDay] {
        try await inner.closedDays(designerID: designerID, from: from, through: through)
    }

    func menu(designerID: String) async throws -> [StyleRecord] {
        try await inner.menu(designerID: designerID)
    }

    func bookingSetting(
        designerID: String, closedFrom: LocalDay, through: LocalDay, customerID: String, idempotencyKey: String?
    ) async throws -> BookingSetting {
        try await inner.bookingSetting(
            designerID: designerID, closedFrom: closedFrom, through: through, customerID: customerID,
            idempotencyKey: idempotencyKey)
    }

    func bookedTimes(designerID: String, from: Int64, until: Int64) async throws -> BookedTimes {
        try await inner.bookedTimes(designerID: designerID, from: from, until: until)
    }

    func reservation(id: String) async throws -> ReservationRecord? {
        try await inner.reservation(id: id)
    }

    func reservations(
        of party: ReservationParty, filter: ReservationListFilter, now: Int64, after position: ReservationPosition?,
        limit: Int
    ) async throws -> [ReservationRecord] {
        try await inner.reservations(of: party, filter: filter, now: now, after: position, limit: limit)
    }

    func designerReservations(designerID: String, from: Int64, until: Int64) async throws -> [ReservationRecord] {
        try await inner.designerReservations(designerID: designerID, from: from, until: until)
    }
}
