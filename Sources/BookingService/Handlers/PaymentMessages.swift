import RPCCore
import ServiceRuntime
import YediProto

/// Payment records as the proto's messages, and the designer's settlement statement.
extension BookingHandlers {
    func paymentMessage(_ record: PaymentRecord) -> YediBooking.Payment {
        YediBooking.Payment(
            id: record.id, orderID: record.orderID, reservationID: record.reservationID,
            customerID: record.customerID, designerID: record.designerID, amountKRW: record.amountKRW,
            status: Self.status(record.state), refundedKRW: record.lifecycle.refundedKRW, orderName: record.orderName,
            createdAtMs: record.createdAtMilliseconds, holdUntilMs: record.holdUntilMilliseconds,
            paidAtMs: record.paidAtMilliseconds ?? 0, failureCode: record.failureCode ?? "",
            failureMessage: record.failureMessage ?? "",
            transitions: record.lifecycle.transitions.map {
                YediBooking.PaymentTransition(status: Self.status($0.state), atMs: $0.atMilliseconds)
            },
            refunds: record.refunds.map {
                YediBooking.Refund(
                    id: $0.id, amountKRW: $0.amountKRW, status: $0.state == .done ? .done : .requested,
                    reason: $0.reason, requestedAtMs: $0.requestedAtMilliseconds, doneAtMs: $0.doneAtMilliseconds ?? 0)
            },
            provider: record.provider, checkoutHint: payments.provider.prepare(record.order).hint)
    }

    static func status(_ state: PaymentState?) -> YediBooking.PaymentStatus {
        switch state {
        case nil: .unspecified
        case .prepared: .prepared
        case .confirming: .confirming
        case .paid: .paid
        case .partiallyRefunded: .partiallyRefunded
        case .refunded: .refunded
        case .expired: .expired
        case .failed: .failed
        }
    }

    /// Received, refunded and net per day of the month with money moving, and for the month, in the
    /// shop's zone (both 0: the current month).
    func settlement(designerID: String, year: Int32, month: Int32, clock shop: ShopClock) async throws
        -> (days: [YediBooking.SettlementLine], month: YediBooking.SettlementLine)
    {
        let first: LocalDay
        if year == 0 && month == 0 {
            let today = shop.today(clock.nowMilliseconds)
            first = LocalDay(year: today.year, month: today.month, day: 1)!
        } else {
            guard (2000...2200).contains(year) else { throw BookingRules.invalid("year", "2000–2200") }
            guard let day = LocalDay(year: Int(year), month: Int(month), day: 1) else {
                throw BookingRules.invalid("month", "1–12")
            }
            first = day
        }
        let next = first.adding(days: LocalDay.daysInMonth(year: first.year, month: first.month))
        let movements = try await payments.store.movements(
            designerID: designerID, from: shop.startOfDay(first), until: shop.startOfDay(next))
        var days: [Int: (received: Int64, refunded: Int64)] = [:]
        for movement in movements {
            let day = shop.local(movement.atMilliseconds).day.dayNumber
            if movement.amountKRW >= 0 {
                days[day, default: (0, 0)].received += movement.amountKRW
            } else {
                days[day, default: (0, 0)].refunded -= movement.amountKRW
            }
        }
        func line(_ period: String, _ sums: (received: Int64, refunded: Int64)) -> YediBooking.SettlementLine {
            YediBooking.SettlementLine(
                period: period, receivedKRW: sums.received, refundedKRW: sums.refunded,
                netKRW: sums.received - sums.refunded)
        }
        let total = days.values.reduce((received: Int64(0), refunded: Int64(0))) {
            ($0.received + $1.received, $0.refunded + $1.refunded)
        }
        return (
            days.keys.sorted().map { line(LocalDay(dayNumber: $0).key, days[$0]!) },
            line(String(first.key.prefix(7)), total)
        )
    }
}
