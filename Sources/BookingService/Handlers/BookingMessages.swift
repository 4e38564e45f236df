import RPCCore
import ServiceRuntime
import YediProto

/// Records as the proto's messages (kept apart from the handlers' rules).
extension BookingHandlers {
    func message(_ record: ReservationRecord, now: Int64) -> YediBooking.Reservation {
        let zone = ShopClock(identifier: record.timeZone) ?? ShopClock(identifier: ShopClock.defaultZone)!
        let daysLeft = zone.local(record.startAtMilliseconds).day.dayNumber - zone.today(now).dayNumber
        return YediBooking.Reservation(
            id: record.id, customerID: record.customerID, designerID: record.designerID,
            startAtMs: record.startAtMilliseconds, styles: record.styles.map(Self.style),
            totalPriceKRW: record.totalPriceKRW, status: record.status == .confirmed ? .confirmed : .cancelled,
            createdAtMs: record.createdAtMilliseconds, daysLeft: Int32(clamping: daysLeft),
            endAtMs: record.endAtMilliseconds, timeZone: record.timeZone,
            cancelledAtMs: record.cancelledAtMilliseconds ?? 0, paymentStatus: Self.status(record.paymentState),
            paidKRW: record.paidKRW, refundedKRW: record.refundedKRW,
            cancelReason: YediBooking.CancelReason(rawValue: Int32(record.cancelReason)),
            cancelNote: record.cancelNote, cancelledBy: YediBooking.CancelledBy(rawValue: Int32(record.cancelledBy)))
    }

    static func style(_ record: StyleRecord) -> YediBooking.Style {
        YediBooking.Style(
            id: record.id, name: record.name, category: YediCommon.HairCategory(rawValue: Int32(record.category)),
            priceKRW: record.priceKRW, durationMinutes: Int32(record.durationMinutes))
    }

    static func date(_ day: LocalDay) -> YediCommon.LocalDate {
        YediCommon.LocalDate(year: Int32(day.year), month: Int32(day.month), day: Int32(day.day))
    }
}
