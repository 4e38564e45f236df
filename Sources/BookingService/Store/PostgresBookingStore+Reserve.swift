import PostgresNIO
import RPCCore
import ServiceRuntime

/// Reserving and cancelling on PostgreSQL: what keeps two replicas from double booking, from storing a
/// retried reservation twice and from passing a quota together.
extension PostgresBookingStore {
    /// The reservation's row, then one row per 5-minute cell of its time, in one READ COMMITTED
    /// transaction.
    ///
    /// - A held cell is a unique violation on `booked_cell_pkey` (an overlapping reservation still
    ///   uncommitted makes this one wait for its outcome): answered `slotTaken`, nothing stored.
    /// - Cells go in ascending order in one statement, so two overlapping attempts wait for each other in
    ///   one order and never deadlock.
    /// - The same customer and idempotency key racing on two replicas meet on `reservation_idempotency`:
    ///   the second insert waits for the first's commit and, with `ON CONFLICT DO NOTHING`, inserts
    ///   nothing instead of aborting the transaction; a new statement (a new READ COMMITTED snapshot) then
    ///   reads the stored reservation, which is the answer, never "taken". (A rolled-back first lets the
    ///   second insert.)
    /// - With quotas, the customer's lock (`lockCustomer`) is taken first: the count and the insert of
    ///   two concurrent reserves of one customer run one after the other.
    func reserve(_ reservation: ReservationRecord, quotas: ReservationQuotas?) async throws -> ReserveOutcome {
        let cells = BookingSchema.cells(from: reservation.startAtMilliseconds, until: reservation.endAtMilliseconds)
        do {
            return try await postgres.write { [app, scheduler] tx in
                if quotas != nil { try await Self.lockCustomer(reservation.customerID, tx) }
                if let key = reservation.idempotencyKey,
                    let existing = try await Self.reservation(customerID: reservation.customerID, key: key, app, tx)
                {
                    return .existing(existing)
                }
                if let quotas { try await Self.check(quotas, for: reservation, tx) }
                guard try await Self.insert(reservation, app, tx) else {
                    // The key was taken by a transaction that committed meanwhile: its reservation is the answer.
                    guard let key = reservation.idempotencyKey,
                        let existing = try await Self.reservation(customerID: reservation.customerID, key: key, app, tx)
                    else {
                        // Stored and purged in between: rare enough to ask for a retry.
                        throw RPCError(
                            code: .unavailable,
                            message: "the reservation changed meanwhile; nothing was applied: try again")
                    }
                    return .existing(existing)
                }
                try await tx.execute(BookingStatements.InsertCells.self, reservation.designerID, reservation.id, cells)
                if let scheduler, let reminder = ReservationReminder.job(for: reservation) {
                    try await scheduler.schedule(reminder, in: tx)
                }
                return .created(reservation)
            }
        } catch let violation as PostgresConstraintViolation
            where violation.isUniqueViolation && violation.constraint == "booked_cell_pkey"
        {
            throw BookingStoreError.slotTaken
        }
    }

    /// Serializes one customer's reserving transactions (until commit or rollback) on a transaction-level
    /// advisory lock named by the customer: no table row is needed, and a hash collision only makes two
    /// customers wait for each other. Taken before the cells, so the order of locks is always customer,
    /// then cells.
    static func lockCustomer(_ customerID: String, _ tx: PostgresTransaction) async throws {
        try await tx.execute(BookingStatements.LockCustomer.self, customerID)
    }

    /// Counted after `lockCustomer`, in statements of their own, so each sees every reservation committed
    /// by the customer's previous transaction.
    static func check(_ quotas: ReservationQuotas, for reservation: ReservationRecord, _ tx: PostgresTransaction)
        async throws
    {
        let now = reservation.createdAtMilliseconds
        let open = try await tx.execute(BookingStatements.OpenReservations.self, reservation.customerID, now)
        try quotas.open.check(used: try open[0].decode(Int64.self))
        let dayStart = QuotaDay.start(of: now)
        let today = try await tx.execute(BookingStatements.ReservationsSince.self, reservation.customerID, dayStart)
        try quotas.perDay.check(used: try today[0].decode(Int64.self))
    }

    /// One conditional update: of two cancels at once, the second waits for the first's row lock, then finds
    /// the reservation no longer confirmed and changes nothing (it answers the first's time).
    func cancel(id: String, at milliseconds: Int64) async throws -> ReservationRecord? {
        try await postgres.write { [app, scheduler] tx in
            try await tx.query(
                """
                UPDATE reservation SET status = 'cancelled', cancelled_at_ms = \(milliseconds)
                WHERE id = \(id) AND app = \(app.rawValue) AND status = 'confirmed'
                """)
            guard
                let cancelled = try await tx.query(
                    "SELECT * FROM reservation WHERE id = \(id) AND app = \(app.rawValue)"
                ).first.map(Self.decodeReservation)
            else { return nil }
            try await tx.query("DELETE FROM booked_cell WHERE reservation_id = \(id)")
            _ = try await scheduler?.cancel(id: ReservationReminder.jobID(id), in: tx)
            return cancelled
        }
    }
}
