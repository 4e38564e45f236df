import Foundation

extension YediMix {
    /// The users the run signed up, and what they made while seeding.
    struct Cast: Sendable {
        struct Designer: Sendable {
            var id: String
            var token: String
            /// The posts the designer made while seeding.
            var postIDs: [String]
            /// The first style of the designer's menu: what the customers book.
            var styleID: String
        }
        struct Customer: Sendable {
            var id: String
            var token: String
            /// Their room with `designers[designer]`, whom they follow and booked once.
            var roomID: String
            var designer: Int
        }
        var designers: [Designer]
        var customers: [Customer]
        /// Every post of the cast.
        var postIDs: [String]
        /// ListFreeSlots' range in the mix: today and the six days after, in Seoul.
        var week: (from: String, to: String)

        /// The designer of a customer's room.
        func designer(of customer: Customer) -> Designer { designers[customer.designer] }

        /// Every user, designers first.
        var users: [(id: String, token: String)] {
            designers.map { ($0.id, $0.token) } + customers.map { ($0.id, $0.token) }
        }
    }

    /// Local dates in Seoul, as LocalDate JSON.
    enum Dates {
        /// The date `days` after today, in Seoul.
        static func json(daysFromToday days: Int, now: Date = Date()) -> String {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "Asia/Seoul") ?? .current
            let date = now.addingTimeInterval(Double(days) * 86_400)
            let parts = calendar.dateComponents([.year, .month, .day], from: date)
            return #"{"year": \#(parts.year ?? 2026), "month": \#(parts.month ?? 1), "day": \#(parts.day ?? 1)}"#
        }

        /// Today and six days later.
        static func week() -> (from: String, to: String) {
            (json(daysFromToday: 0), json(daysFromToday: 6))
        }

        /// Tomorrow to 30 days after today (ListFreeSlots takes at most 31 days): where the run books,
        /// so that no slot it holds passes during the run.
        static func bookingRange() -> (from: String, to: String) {
            (json(daysFromToday: 1), json(daysFromToday: 30))
        }
    }
}
