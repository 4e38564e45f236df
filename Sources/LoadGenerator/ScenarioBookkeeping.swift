import NIOConcurrencyHelpers

// Bookkeeping of `yedi-probe load --scenario yedi-mix`: what keeps its repeated calls valid, apart from
// RPC so that tests can drive it.

/// Which (customer, post) pairs the mix liked: each pick of the pair flips it, so likes and unlikes
/// alternate and the counts stay bounded however long the run.
public final class LikeBook: Sendable {
    private let liked = NIOLockedValueBox<Set<Int>>([])
    private let posts: Int

    public init(posts: Int) { self.posts = posts }

    /// True: like the post now; false: unlike it.
    public func flip(customer: Int, post: Int) -> Bool {
        let key = customer * posts + post
        return liked.withLockedValue { liked in
            if liked.remove(key) != nil { return false }
            liked.insert(key)
            return true
        }
    }
}

/// The mix's reservations, kept within BookingService's quotas: each customer holds at most one
/// reservation of the mix at a time (beside the one seeded: 2 of the 5 upcoming `reservations.open`),
/// and makes at most `budget` in all (`reservations.day` counts cancelled ones: 10 a day, one of them
/// seeded). Slots come from a pool per designer read at seeding (free, from tomorrow on), so two
/// customers never ask for the same one.
public final class ReservationDesk: Sendable {
    /// What to do next.
    public enum Step: Equatable, Sendable {
        /// Cancel `reservation` of `customer` (which holds `slot` of its designer).
        case cancel(customer: Int, reservation: String, slot: Int64)
        /// Reserve `slot` of the customer's designer.
        case reserve(customer: Int, slot: Int64, key: Int)
        /// Nothing can be reserved or cancelled now (every customer is busy or out of budget, or no slot
        /// is free): the mix lists reservations instead.
        case none
    }

    private enum Hold {
        case free
        case busy
        case holding(reservation: String, slot: Int64)
    }

    private struct State {
        var holds: [Hold]
        var budgets: [Int]
        /// Free slots per designer.
        var slots: [[Int64]]
        var keys = 0
    }

    private let state: NIOLockedValueBox<State>
    private let designerOf: [Int]

    /// `designerOf[c]` is customer c's designer; `slots[d]` designer d's free slots.
    public init(designerOf: [Int], slots: [[Int64]], budget: Int) {
        self.designerOf = designerOf
        state = NIOLockedValueBox(
            State(
                holds: Array(repeating: .free, count: designerOf.count),
                budgets: Array(repeating: budget, count: designerOf.count), slots: slots))
    }

    /// Cancels a held reservation if there is one, else reserves for a customer with budget left;
    /// `start` is where to look first, so different customers get their turn.
    public func next(start: Int) -> Step {
        state.withLockedValue { state in
            let count = state.holds.count
            guard count > 0 else { return .none }
            for offset in 0..<count {
                let customer = (start + offset) % count
                if case .holding(let reservation, let slot) = state.holds[customer] {
                    state.holds[customer] = .busy
                    return .cancel(customer: customer, reservation: reservation, slot: slot)
                }
            }
            for offset in 0..<count {
                let customer = (start + offset) % count
                let designer = designerOf[customer]
                guard case .free = state.holds[customer], state.budgets[customer] > 0,
                    let slot = state.slots[designer].popLast()
                else { continue }
                state.holds[customer] = .busy
                state.budgets[customer] -= 1
                state.keys += 1
                return .reserve(customer: customer, slot: slot, key: state.keys)
            }
            return .none
        }
    }

    /// The reservation was made (`reservation` is its id) or failed (nil: the slot is not offered again,
    /// as it may have been taken after all).
    public func reserved(customer: Int, slot: Int64, reservation: String?) {
        state.withLockedValue { state in
            if let reservation {
                state.holds[customer] = .holding(reservation: reservation, slot: slot)
            } else {
                state.holds[customer] = .free
            }
        }
    }

    /// The cancellation went through (the slot is free again) or failed (the customer keeps it and
    /// cancels on a later turn).
    public func cancelled(customer: Int, reservation: String, slot: Int64, succeeded: Bool) {
        state.withLockedValue { state in
            if succeeded {
                state.holds[customer] = .free
                state.slots[designerOf[customer]].insert(slot, at: 0)
            } else {
                state.holds[customer] = .holding(reservation: reservation, slot: slot)
            }
        }
    }
}
