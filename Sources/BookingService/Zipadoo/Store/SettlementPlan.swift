/// What settling a promise decides, apart from where it is written (both engines' stores apply it): each
/// participant's outcome, and the potato moves. Each latecomer's fee is split evenly among those on time
/// in whole potatoes, the remainder one each in rank order; nobody on time: nothing moves.
struct SettlementPlan {
    struct Move {
        var payer: String
        var payee: String
        var amount: Int64
    }

    var outcome: [String: ArrivalOutcome] = [:]
    var moves: [Move] = []
    /// Each participant's net potatoes from this promise.
    var potatoes: [String: Int64] = [:]

    init(_ promise: PromiseRecord) {
        let lateFrom = promise.atMilliseconds + PromiseRules.lateAfter
        var onTime: [ParticipantRecord] = []
        var late: [ParticipantRecord] = []
        for participant in promise.participants {
            if let arrived = participant.arrivedAtMilliseconds, arrived < lateFrom {
                outcome[participant.userID] = .onTime
                onTime.append(participant)
            } else {
                outcome[participant.userID] = participant.arrivedAtMilliseconds == nil ? .neverArrived : .late
                late.append(participant)
            }
        }
        onTime.sort { ($0.rank ?? Int.max) < ($1.rank ?? Int.max) }
        guard !onTime.isEmpty, promise.fee > 0 else { return }
        let share = promise.fee / onTime.count
        let remainder = promise.fee % onTime.count
        for payer in late {
            for (index, payee) in onTime.enumerated() {
                let amount = Int64(share + (index < remainder ? 1 : 0))
                guard amount > 0 else { continue }
                moves.append(Move(payer: payer.userID, payee: payee.userID, amount: amount))
                potatoes[payer.userID, default: 0] -= amount
                potatoes[payee.userID, default: 0] += amount
            }
        }
    }
}
