import Foundation
import Logging
import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// `yedi.booking.BookingService`: the handlers. Access rules (who may call what) are in the proto and
/// enforced before these run; handlers check ownership and validate fields.
struct BookingHandlers: YediBooking.BookingService.ServiceProtocol, HandlerKitUser {
    let store: any BookingStore
    /// Free slots by (designer, day); `store` invalidates it on every change they depend on.
    let freeDays: FreeDayCache
    let kit: HandlerKit
    /// Payments: their store and the provider behind them (docs/payments.md).
    let payments: PaymentFlow
    /// A designer's shop hours from AccountService (throws its RPCError, e.g. NOT_FOUND for a non-designer).
    let shopHours: @Sendable (String) async throws -> YediAccount.ShopHours

    /// A user's reservations, by start and id.
    var reservationPages: PageList { kit.pageList("reservations") }

    // MARK: Schedule

    func getSchedule(_ request: YediBooking.GetScheduleRequest, context: ServerContext) async throws
        -> YediBooking.Schedule
    {
        let designerID = try BookingRules.id(request.designerID, field: "designer_id")
        return try await scheduleMessage(try await schedule(of: designerID))
    }

    func updateSchedule(_ request: YediBooking.UpdateScheduleRequest, context: ServerContext) async throws
        -> YediBooking.Schedule
    {
        let designerID = try context.requireRole(.designer).id
        if let named = request.schedule?.designerID, !named.isEmpty, named != designerID {
            throw RPCError(
                code: .permissionDenied, message: "schedule.designer_id: you can only edit your own schedule")
        }
        _ = try await ownSchedule(designerID, context: context)
        let updated = try BookingRules.schedule(request.schedule, designerID: designerID, now: clock.nowMilliseconds)
        try await store.updateSchedule(updated)
        return try await scheduleMessage(updated)
    }

    func updateClosedDays(_ request: YediBooking.UpdateClosedDaysRequest, context: ServerContext) async throws
        -> YediBooking.Schedule
    {
        let designerID = try context.requireRole(.designer).id
        guard request.add.count + request.remove.count <= 100 else {
            throw BookingRules.invalid("add", "at most 100 dates per call")
        }
        let schedule = try await ownSchedule(designerID, context: context)
        let today = shopClock(schedule).today(clock.nowMilliseconds)
        var add: [LocalDay] = []
        for (index, date) in request.add.enumerated() {
            let day = try BookingRules.day(date, field: "add[\(index)]")
            guard day >= today, day.dayNumber - today.dayNumber <= BookingRules.closedDayHorizonDays else {
                throw BookingRules.invalid("add[\(index)]", "from today (\(today)) to two years ahead")
            }
            add.append(day)
        }
        var remove: [LocalDay] = []
        for (index, date) in request.remove.enumerated() {
            remove.append(try BookingRules.day(date, field: "remove[\(index)]"))
        }
        try await store.updateClosedDays(designerID: designerID, add: add, remove: remove)
        return try await scheduleMessage(schedule)
    }

    // MARK: Menu

    func getMenu(_ request: YediBooking.GetMenuRequest, context: ServerContext) async throws -> YediBooking.Menu {
        let designerID = try BookingRules.id(request.designerID, field: "designer_id")
        _ = try await schedule(of: designerID)
        return YediBooking.Menu(
            designerID: designerID, styles: try await store.menu(designerID: designerID).map(Self.style))
    }

    func updateMenu(_ request: YediBooking.UpdateMenuRequest, context: ServerContext) async throws -> YediBooking.Menu {
        let designerID = try context.requireRole(.designer).id
        _ = try await ownSchedule(designerID, context: context)
        let existing = Set(try await store.menu(designerID: designerID).map(\.id))
        let styles = try BookingRules.menu(request.styles, existing: existing, newID: ids.next)
        try await store.replaceMenu(designerID: designerID, styles: styles)
        return YediBooking.Menu(designerID: designerID, styles: styles.map(Self.style))
    }

    // MARK: Reservations

    func createReservation(_ request: YediBooking.CreateReservationRequest, context: ServerContext) async throws
        -> YediBooking.Reservation
    {
        let customerID = try context.requireRole(.customer).id
        let designerID = try BookingRules.id(request.designerID, field: "designer_id")
        guard designerID != customerID else { throw BookingRules.invalid("designer_id", "that is you") }
        guard (1...10).contains(request.styleIDs.count) else { throw BookingRules.invalid("style_ids", "1–10 styles") }
        guard Set(request.styleIDs).count == request.styleIDs.count else {
            throw BookingRules.invalid("style_ids", "a style is listed twice")
        }
        guard request.idempotencyKey.utf8.count <= 100 else {
            throw BookingRules.invalid("idempotency_key", "at most 100 bytes")
        }
        let key = request.idempotencyKey.isEmpty ? nil : request.idempotencyKey
        let now = clock.nowMilliseconds
        // One read: the shop's local date of the start is within a day of its UTC date in every zone.
        // (Clamped to years 1970–9999; the grid refuses such starts anyway.)
        let utcDay = Int(max(1, min(request.startAtMs / 86_400_000, 2_932_000)))
        let setting = try await store.bookingSetting(
            designerID: designerID, closedFrom: LocalDay(dayNumber: utcDay - 1),
            through: LocalDay(dayNumber: utcDay + 1), customerID: customerID, idempotencyKey: key)
        if let earlier = setting.earlier { return try answerRetry(earlier, request) }
        guard let schedule = setting.schedule else {
            throw RPCError(code: .notFound, message: "designer_id: no such designer")
        }
        let grid = SlotGrid(schedule: schedule, clock: shopClock(schedule), closedDays: Set(setting.closedDays))
        if let refusal = grid.refusal(request.startAtMs, now: now) {
            throw RPCError(code: .failedPrecondition, message: refusal)
        }
        guard request.startAtMs - now <= BookingRules.bookingHorizonMilliseconds else {
            throw RPCError(code: .failedPrecondition, message: "start_at_ms: bookable at most a year ahead")
        }
        let menu = Dictionary(setting.menu.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var styles: [StyleRecord] = []
        for (index, id) in request.styleIDs.enumerated() {
            guard let style = menu[id] else {
                throw BookingRules.invalid("style_ids[\(index)]", "not on this designer's menu")
            }
            styles.append(style)
        }
        let end = request.startAtMs + grid.slotMilliseconds
        let reservation = ReservationRecord(
            id: ids.next(), customerID: customerID, designerID: designerID, startAtMilliseconds: request.startAtMs,
            endAtMilliseconds: end, timeZone: schedule.timeZone, styles: styles,
            totalPriceKRW: styles.reduce(0) { $0 + $1.priceKRW }, status: .confirmed, idempotencyKey: key,
            createdAtMilliseconds: now, cancelledAtMilliseconds: nil)
        do {
            let limits = ReservationQuotas(open: quotas.reservationsOpen, perDay: quotas.reservationsPerDay)
            switch try await store.reserve(reservation, quotas: limits) {
            case .created(let created): return message(created, now: now)
            case .existing(let earlier): return try answerRetry(earlier, request)
            }
        } catch BookingStoreError.slotTaken {
            throw RPCError(code: .alreadyExists, message: "start_at_ms: the slot is already booked")
        } catch let exceeded as QuotaExceeded {
            throw exceeded.status
        }
    }

    func cancelReservation(_ request: YediBooking.CancelReservationRequest, context: ServerContext) async throws
        -> YediBooking.Reservation
    {
        let userID = try context.requireUser().id
        let id = try BookingRules.id(request.reservationID, field: "reservation_id")
        let (reason, note) = try PaymentRules.cancellation(request.reason, note: request.note)
        guard let reservation = try await store.reservation(id: id) else {
            throw RPCError(code: .notFound, message: "no such reservation")
        }
        guard reservation.customerID == userID || reservation.designerID == userID else {
            throw RPCError(
                code: .permissionDenied, message: "only the reservation's customer or designer may cancel it")
        }
        let now = clock.nowMilliseconds
        guard reservation.status == .confirmed else { return message(reservation, now: now) }
        guard now < reservation.startAtMilliseconds else {
            throw RPCError(
                code: .failedPrecondition, message: "the reservation has started; it can no longer be cancelled")
        }
        let byDesigner = reservation.designerID == userID
        let cancellation = Cancellation(
            by: byDesigner ? .designer : .customer, reason: reason, note: note, atMilliseconds: now)
        // A designer's cancellation refunds everything; a customer's follows the shop's policy.
        guard
            let (cancelled, refund) = try await payments.store.cancelReservation(
                id: id, cancellation,
                refundAmount: { balance, policy, start in
                    byDesigner
                        ? (balance, "the designer cancelled: full refund")
                        : policy.customerRefund(balanceKRW: balance, start: start, now: now)
                })
        else { throw RPCError(code: .notFound, message: "no such reservation") }
        guard let refund else { return message(cancelled, now: now) }
        // Confirmed with the provider now when it answers; otherwise the outbox job keeps trying.
        do {
            try await payments.refund(refund.id)
        } catch {
            context.logger.warning("payment: refund left to the outbox", metadata: ["error": "\(error)"])
        }
        return message(try await store.reservation(id: id) ?? cancelled, now: now)
    }

    func listReservations(_ request: YediBooking.ListReservationsRequest, context: ServerContext) async throws
        -> YediBooking.ListReservationsResponse
    {
        guard case .user(let user) = context.caller else {
            throw RPCError(code: .unauthenticated, message: "sign-in required: send an access token")
        }
        let filter: ReservationListFilter
        switch request.filter {
        case .upcoming: filter = .upcoming
        case .past: filter = .past
        case .cancelled: filter = .cancelled
        default: throw BookingRules.invalid("filter", "upcoming, past or cancelled")
        }
        let party: ReservationParty = user.role == .designer ? .designer(user.id) : .customer(user.id)
        let page = try reservationPages.read(request.page, as: Int64.self)
        let now = clock.nowMilliseconds
        let rows = try await store.reservations(
            of: party, filter: filter, now: now, after: page.after, limit: page.limit + 1)
        return YediBooking.ListReservationsResponse(
            reservations: rows.prefix(page.limit).map { message($0, now: now) },
            page: reservationPages.next(
                rows.map { ReservationPosition(key: $0.startAtMilliseconds, id: $0.id) }, limit: page.limit))
    }

    func getDayTimeline(_ request: YediBooking.GetDayTimelineRequest, context: ServerContext) async throws
        -> YediBooking.GetDayTimelineResponse
    {
        let designerID = try context.requireRole(.designer).id
        let day = try BookingRules.day(request.date, field: "date")
        let schedule = try await ownSchedule(designerID, context: context)
        let grid = try await grid(schedule, from: day, through: day)
        let now = clock.nowMilliseconds
        let start = grid.clock.startOfDay(day)
        let end = grid.clock.startOfDay(day.adding(days: 1))
        let reservations = try await store.designerReservations(designerID: designerID, from: start, until: end)
        let booked = try await store.bookedTimes(
            designerID: designerID, from: start, until: end + grid.slotMilliseconds)
        // A closed day lists only slots still held by reservations made before it was closed.
        let closed = grid.isClosed(day)
        let slots = grid.slots(on: day).compactMap { slot -> YediBooking.Slot? in
            let isBooked = booked.overlaps(slot.start, slot.start + grid.slotMilliseconds)
            let state: YediBooking.SlotState
            if isBooked {
                state = .booked
            } else if closed {
                return nil
            } else if slot.start <= now {
                state = .past
            } else {
                state = slot.inBreak ? .break : .available
            }
            return YediBooking.Slot(startAtMs: slot.start, minuteOfDay: Int32(slot.minute), state: state)
        }
        return YediBooking.GetDayTimelineResponse(
            closed: closed, slots: slots,
            reservations: reservations.map { message($0, now: now) })
    }

    func getMonthCalendar(_ request: YediBooking.GetMonthCalendarRequest, context: ServerContext) async throws
        -> YediBooking.GetMonthCalendarResponse
    {
        let designerID = try context.requireRole(.designer).id
        guard (2000...2200).contains(request.year) else { throw BookingRules.invalid("year", "2000–2200") }
        guard let first = LocalDay(year: Int(request.year), month: Int(request.month), day: 1) else {
            throw BookingRules.invalid("month", "1–12")
        }
        let last = first.adding(days: LocalDay.daysInMonth(year: first.year, month: first.month) - 1)
        let schedule = try await ownSchedule(designerID, context: context)
        let grid = try await grid(schedule, from: first, through: last)
        let reservations = try await store.designerReservations(
            designerID: designerID, from: grid.clock.startOfDay(first),
            until: grid.clock.startOfDay(last.adding(days: 1)))
        var counts: [Int: Int32] = [:]
        for reservation in reservations {
            counts[grid.clock.local(reservation.startAtMilliseconds).day.dayNumber, default: 0] += 1
        }
        return YediBooking.GetMonthCalendarResponse(
            days: (first.dayNumber...last.dayNumber).map { number in
                let day = LocalDay(dayNumber: number)
                return YediBooking.CalendarDay(
                    date: Self.date(day), closed: grid.isClosed(day), reservationCount: counts[number] ?? 0)
            })
    }

    // MARK: Internal

    func getReservation(_ request: YediBooking.GetReservationRequest, context: ServerContext) async throws
        -> YediBooking.Reservation
    {
        let id = try BookingRules.id(request.reservationID, field: "reservation_id")
        guard let reservation = try await store.reservation(id: id) else {
            throw RPCError(code: .notFound, message: "no such reservation")
        }
        // Only for a service acting for the reservation's customer or designer.
        try context.requireActing(
            forOneOf: [reservation.customerID, reservation.designerID], field: "reservation_id")
        return message(reservation, now: clock.nowMilliseconds)
    }

    func purgeUser(_ request: YediCommon.PurgeUserRequest, context: ServerContext) async throws
        -> YediCommon.PurgeUserResponse
    {
        guard !request.userID.isEmpty else { throw BookingRules.invalid("user_id", "required") }
        let applied = try await store.purgeUser(request.userID, delivery: Delivery(context), now: clock.nowMilliseconds)
        context.logPurge(of: request.userID, firstDelivery: applied)
        return YediCommon.PurgeUserResponse()
    }

    // MARK: Helpers

    func shopClock(_ schedule: ScheduleRecord) -> ShopClock {
        // Zones are checked when stored; Seoul only if the system's tz database lost one since.
        ShopClock(identifier: schedule.timeZone) ?? ShopClock(identifier: ShopClock.defaultZone)!
    }

    func grid(_ schedule: ScheduleRecord, from: LocalDay, through: LocalDay) async throws -> SlotGrid {
        SlotGrid(
            schedule: schedule, clock: shopClock(schedule),
            closedDays: Set(try await store.closedDays(designerID: schedule.designerID, from: from, through: through)))
    }

    private func scheduleMessage(_ schedule: ScheduleRecord) async throws -> YediBooking.Schedule {
        let today = shopClock(schedule).today(clock.nowMilliseconds)
        let closed = try await store.closedDays(
            designerID: schedule.designerID, from: today, through: today.adding(days: BookingRules.closedDayHorizonDays)
        )
        return YediBooking.Schedule(
            designerID: schedule.designerID, openingMinute: Int32(schedule.openingMinute),
            closingMinute: Int32(schedule.closingMinute), timeZone: schedule.timeZone,
            breaks: schedule.breaks.map { .init(startMinute: Int32($0.start), endMinute: Int32($0.end)) },
            closedDays: closed.map(Self.date),
            closedWeekdays: schedule.closedWeekdays.map { YediBooking.Weekday(rawValue: Int32($0)) },
            slotMinutes: Int32(schedule.slotMinutes))
    }

    /// A retry with a used idempotency key: the first reservation, if the request is the same one.
    private func answerRetry(_ earlier: ReservationRecord, _ request: YediBooking.CreateReservationRequest) throws
        -> YediBooking.Reservation
    {
        guard earlier.designerID == request.designerID, earlier.startAtMilliseconds == request.startAtMs else {
            throw BookingRules.invalid("idempotency_key", "already used for another reservation")
        }
        return message(earlier, now: clock.nowMilliseconds)
    }
}
