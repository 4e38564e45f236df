import ServiceRuntime

/// A break in local minutes after midnight: [start, end).
struct BreakRange: Equatable, Codable, Sendable {
    var start: Int
    var end: Int
}

/// A designer's schedule as stored; closed dates live in their own rows.
struct ScheduleRecord: Equatable, Sendable {
    var designerID: String
    var openingMinute: Int
    var closingMinute: Int
    var slotMinutes: Int
    var timeZone: String
    var breaks: [BreakRange]
    /// ISO weekdays, 1 Monday … 7 Sunday, ascending.
    var closedWeekdays: [Int]
    var updatedAtMilliseconds: Int64
}

/// A style of a menu; reservations keep a copy as priced when booked.
struct StyleRecord: Equatable, Codable, Sendable {
    var id: String
    var name: String
    /// `yedi.common.HairCategory` raw value (1 cut, 2 perm, 3 colour, 4 other).
    var category: Int
    var priceKRW: Int64
    var durationMinutes: Int
}

enum ReservationState: String, Sendable {
    case confirmed
    case cancelled
}

struct ReservationRecord: Equatable, Sendable {
    var id: String
    var customerID: String
    var designerID: String
    var startAtMilliseconds: Int64
    var endAtMilliseconds: Int64
    /// The shop's zone when booked ("days left" is counted in it).
    var timeZone: String
    var styles: [StyleRecord]
    var totalPriceKRW: Int64
    var status: ReservationState
    var idempotencyKey: String?
    var createdAtMilliseconds: Int64
    var cancelledAtMilliseconds: Int64?
    /// The latest payment's state (nil: none prepared) and the money so far (docs/payments.md).
    var paymentState: PaymentState? = nil
    var paidKRW: Int64 = 0
    var refundedKRW: Int64 = 0
    /// `yedi.booking.CancelReason` and `CancelledBy` raw values (0: none), and the canceller's note.
    var cancelReason: Int = 0
    var cancelNote: String = ""
    var cancelledBy: Int = 0
}

/// Which of a user's reservations a list shows.
enum ReservationListFilter: Sendable {
    /// Confirmed, start after now, soonest first.
    case upcoming
    /// Confirmed, start at or before now, newest first.
    case past
    /// Cancelled, newest start first.
    case cancelled
}

/// Whose reservations (or payments): a customer's or a designer's.
enum ReservationParty: Sendable {
    case customer(String)
    case designer(String)

    /// The column naming the party in `reservation` and `payment`, and the user's id.
    var column: (name: String, userID: String) {
        switch self {
        case .customer(let id): ("customer_id", id)
        case .designer(let id): ("designer_id", id)
        }
    }
}

/// The position after which a page starts (the last row of the previous page): its start and id.
typealias ReservationPosition = PagePosition<Int64>

enum ReserveOutcome: Equatable, Sendable {
    case created(ReservationRecord)
    /// The customer's earlier request with the same idempotency key.
    case existing(ReservationRecord)
}

enum BookingStoreError: Error, Equatable {
    /// Another confirmed reservation holds a cell of the slot.
    case slotTaken
}

/// What a new reservation is checked against, as one consistent read: the designer's schedule (nil: not
/// set up here), closed dates in the asked range, the menu in display order, and the customer's earlier
/// reservation with the same idempotency key (a retry), if any.
struct BookingSetting: Sendable {
    var schedule: ScheduleRecord?
    var closedDays: [LocalDay]
    var menu: [StyleRecord]
    var earlier: ReservationRecord?
}
