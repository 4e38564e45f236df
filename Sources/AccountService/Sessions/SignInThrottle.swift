import RPCCore

/// Slows password guessing without handing anyone a way to lock an owner out of their account.
///
/// Failures count per (account, client address): after `maximumFailures` wrong passwords from one
/// address within `window`, that address is locked out of that account for `lockout`; the owner at home
/// is not. Behind that, a backstop per account: once `accountFailuresBeforeSlowing` failures from all
/// addresses fall within `window` (a guess spread over many addresses), addresses the account never
/// signed in from get one attempt per `slowedSpacing` for that account. That slows, never locks, and the
/// addresses the owner signed in from are exempt.
///
/// Every attempt is counted as a failure *before* the password is checked, in the same store
/// transaction as the check of the lock (`AccountStore.beginPasswordAttempt`); a right password gives it
/// back. So concurrent guesses cannot all pass a check that none has yet recorded.
///
/// The account key is the email as typed (lowercased), known or not, so the throttle says nothing about
/// which emails exist. The rules are pure functions of the records; the store keeps them.
struct SignInThrottle: Sendable {
    var maximumFailures = 5
    var windowMilliseconds: Int64 = 15 * 60 * 1_000
    var lockoutMilliseconds: Int64 = 15 * 60 * 1_000
    var accountFailuresBeforeSlowing = 50
    var slowedSpacingMilliseconds: Int64 = 30 * 1_000

    /// Decides the attempt at `now` and, when admitted, counts it as a failure in advance.
    func begin(_ state: inout ThrottleState, now: Int64) -> ThrottleDecision {
        var pair = state.pair ?? ThrottleRecord(now: now)
        if pair.lockedUntilMilliseconds > now { return .locked(untilMilliseconds: pair.lockedUntilMilliseconds) }
        var account = state.account ?? ThrottleRecord(now: now)
        if now - account.windowStartedAtMilliseconds > windowMilliseconds {
            account = ThrottleRecord(now: now)
        }
        if !pair.known, account.failures >= accountFailuresBeforeSlowing {
            if account.lockedUntilMilliseconds > now {
                return .slowed(untilMilliseconds: account.lockedUntilMilliseconds)
            }
            account.lockedUntilMilliseconds = now + slowedSpacingMilliseconds
        }
        if pair.lockedUntilMilliseconds != 0 || now - pair.windowStartedAtMilliseconds > windowMilliseconds {
            pair = ThrottleRecord(now: now, known: pair.known)
        }
        pair.failures += 1
        if pair.failures >= maximumFailures { pair.lockedUntilMilliseconds = now + lockoutMilliseconds }
        account.failures += 1
        state.pair = pair
        state.account = account
        return .admitted
    }

    /// Gives back the failure counted in advance: the password was right (and the address becomes one
    /// the owner signs in from), or the check never ran.
    func end(_ state: inout ThrottleState, _ outcome: PasswordAttemptOutcome) {
        if var pair = state.pair {
            switch outcome {
            case .succeeded:
                pair.failures = 0
                pair.lockedUntilMilliseconds = 0
                pair.known = true
            case .abandoned:
                pair.failures = max(0, pair.failures - 1)
                if pair.failures < maximumFailures { pair.lockedUntilMilliseconds = 0 }
            }
            state.pair = pair
        }
        if var account = state.account {
            account.failures = max(0, account.failures - 1)
            state.account = account
        }
    }

    /// `RESOURCE_EXHAUSTED` with `retry-after` (seconds) for a refused attempt; nil when admitted.
    func refusal(_ decision: ThrottleDecision, now: Int64) -> RPCError? {
        let until: Int64
        let message: String
        switch decision {
        case .admitted: return nil
        case .locked(let time):
            until = time
            message = "too many failed sign-ins for this email from your address"
        case .slowed(let time):
            until = time
            message = "too many failed sign-ins for this email; attempts from new addresses are slowed"
        }
        return .tryAgainLater(message, untilMilliseconds: until, now: now)
    }
}

/// The records one attempt reads and writes: its (account, address) pair and its account's backstop.
struct ThrottleState: Sendable, Hashable {
    var pair: ThrottleRecord?
    var account: ThrottleRecord?
}

enum ThrottleDecision: Sendable, Hashable {
    /// Go ahead and check the password (already counted as a failure).
    case admitted
    /// This address is locked out of this account.
    case locked(untilMilliseconds: Int64)
    /// The account is under a spread-out attack and this address is new to it.
    case slowed(untilMilliseconds: Int64)
}

enum PasswordAttemptOutcome: Sendable, Hashable {
    case succeeded
    /// The password was not checked (the KDF queue was full, the caller left).
    case abandoned
}
