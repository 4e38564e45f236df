import RPCCore
import ServiceRuntime
import YediProto

/// How a designer comes to have a schedule and a menu here: AccountService sends `SetUpDesigner` through
/// its outbox when the designer's account is created, so reads (GetSchedule, GetMenu, ListFreeSlots) and
/// customers' bookings only ever read. A designer's own calls set up one that has not arrived yet (a
/// designer from before SetUpDesigner, or one faster than the outbox) from AccountService's shop hours.
extension BookingHandlers {
    /// The slot length of a new schedule; the designer changes it with UpdateSchedule.
    static let defaultSlotMinutes = 60

    func setUpDesigner(
        _ request: YediBooking.SetUpDesignerRequest, context: ServerContext
    ) async throws -> YediBooking.SetUpDesignerResponse {
        let designerID = try BookingRules.id(request.designerID, field: "designer_id")
        _ = try await setUp(
            designerID,
            hours: YediAccount.ShopHours(
                designerID: designerID, openingHour: request.openingHour, closingHour: request.closingHour,
                timeZone: request.timeZone))
        return YediBooking.SetUpDesignerResponse()
    }

    /// The designer's stored schedule, for anyone's reads: NOT_FOUND when there is none (not a designer,
    /// or one not set up yet). Never writes, never asks AccountService.
    func schedule(of designerID: String) async throws -> ScheduleRecord {
        guard let stored = try await store.schedule(designerID: designerID) else {
            throw RPCError(code: .notFound, message: "designer_id: no such designer")
        }
        return stored
    }

    /// The calling designer's own schedule, set up from AccountService's shop hours if SetUpDesigner has
    /// not arrived yet. AccountService unreachable then: UNAVAILABLE (try again); a schedule is never made
    /// up from defaults, so the hours a designer's customers see are the shop's.
    func ownSchedule(_ designerID: String, context: ServerContext) async throws -> ScheduleRecord {
        if let stored = try await store.schedule(designerID: designerID) { return stored }
        let hours: YediAccount.ShopHours
        do {
            hours = try await shopHours(designerID)
        } catch let error as RPCError where error.code == .notFound {
            throw RPCError(code: .notFound, message: "no such designer")
        } catch {
            context.logger.warning(
                "AccountService did not give the shop hours",
                metadata: ["designer": "\(context.userTag(designerID))", "error": "\(error)"])
            throw RPCError(
                code: .unavailable, message: "the designer's shop hours are unavailable right now; try again")
        }
        return try await setUp(designerID, hours: hours)
    }

    /// Stores the schedule the shop's hours give (9–21 when they cannot make one; Seoul for an unknown
    /// zone) and the default menu, unless the designer has a schedule; answers the stored one.
    private func setUp(_ designerID: String, hours: YediAccount.ShopHours) async throws -> ScheduleRecord {
        var opening = Int(hours.openingHour) * 60
        var closing = Int(hours.closingHour) * 60
        if !(0...1435).contains(opening) || !(5...1440).contains(closing)
            || closing - opening < Self.defaultSlotMinutes
        {
            (opening, closing) = (9 * 60, 21 * 60)
        }
        let zone = ShopClock(identifier: hours.timeZone) != nil ? hours.timeZone : ShopClock.defaultZone
        let schedule = ScheduleRecord(
            designerID: designerID, openingMinute: opening, closingMinute: closing,
            slotMinutes: Self.defaultSlotMinutes, timeZone: zone, breaks: [], closedWeekdays: [],
            updatedAtMilliseconds: clock.nowMilliseconds)
        return try await store.createDesigner(schedule, menu: DefaultMenu.styles(newID: ids.next))
    }
}
