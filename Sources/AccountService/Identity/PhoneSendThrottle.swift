import RPCCore
import ServiceRuntime
import YediCrypto

/// How often phone verification texts a code (issue 28, "Accounts"): the server's own guards, since
/// the original app's lived only on the phone.
///
/// - one send per `cooldown` (4 s) per number;
/// - `perHour` (5) sends per number per hour: the next attempt within that hour locks the number for
///   `lockout` (an hour from then), whatever the window says;
/// - `perHour` (5) sends per client address per hour: the next is refused until the address's hour ends
///   (an address is shared, a lock would punish a whole office; decision).
///
/// A refused attempt sends nothing and is not counted (except that it may start the number's lock).
/// The records are stored (`phone_send_throttle`, `AccountStore.beginPhoneSend`), so a restart forgets
/// nothing; the check and the count are one write transaction, so concurrent sends cannot all pass a
/// check none has recorded. Keys are SHA-256 hashes of the number or address with the app, so the table
/// holds no number in the clear. The rules are pure functions of the records.
struct PhoneSendThrottle: Sendable {
    var cooldownMilliseconds: Int64 = 4_000
    var perHour = 5
    var windowMilliseconds: Int64 = 3_600_000
    var lockoutMilliseconds: Int64 = 3_600_000

    /// The limits of `app`, from its file's `limits` where set (`phone_code_cooldown_seconds`,
    /// `phone_codes_per_hour`: per number and per address), these defaults otherwise.
    func of(_ app: AppConfiguration?) -> PhoneSendThrottle {
        guard let app else { return self }
        var limits = self
        limits.cooldownMilliseconds =
            Int64(app.limit("phone_code_cooldown_seconds", default: Int(cooldownMilliseconds / 1_000))) * 1_000
        limits.perHour = app.limit("phone_codes_per_hour", default: perHour)
        return limits
    }

    /// The stored keys of a number and an address in `app`.
    static func numberKey(app: String, number: String) -> [UInt8] { SHA256.hash("phone-send/number/\(app)/\(number)") }
    static func addressKey(app: String, address: String) -> [UInt8] {
        SHA256.hash("phone-send/address/\(app)/\(address)")
    }

    /// Decides a send at `now` and, when admitted, counts it in both records.
    func begin(number: inout PhoneSendRecord?, address: inout PhoneSendRecord?, now: Int64) -> PhoneSendDecision {
        var byNumber = number ?? PhoneSendRecord(windowStartedAtMilliseconds: now)
        if byNumber.lockedUntilMilliseconds > now {
            return .numberLocked(untilMilliseconds: byNumber.lockedUntilMilliseconds)
        }
        if byNumber.lockedUntilMilliseconds != 0 || now - byNumber.windowStartedAtMilliseconds >= windowMilliseconds {
            byNumber = PhoneSendRecord(
                windowStartedAtMilliseconds: now, lastSentAtMilliseconds: byNumber.lastSentAtMilliseconds)
        }
        if let last = byNumber.lastSentAtMilliseconds, now - last < cooldownMilliseconds {
            return .cooldown(untilMilliseconds: last + cooldownMilliseconds)
        }
        if byNumber.sends >= perHour {
            byNumber.lockedUntilMilliseconds = now + lockoutMilliseconds
            number = byNumber
            return .numberLocked(untilMilliseconds: byNumber.lockedUntilMilliseconds)
        }
        var byAddress = address ?? PhoneSendRecord(windowStartedAtMilliseconds: now)
        if now - byAddress.windowStartedAtMilliseconds >= windowMilliseconds {
            byAddress = PhoneSendRecord(windowStartedAtMilliseconds: now)
        }
        if byAddress.sends >= perHour {
            return .addressExhausted(untilMilliseconds: byAddress.windowStartedAtMilliseconds + windowMilliseconds)
        }
        byNumber.sends += 1
        byNumber.lastSentAtMilliseconds = now
        byAddress.sends += 1
        byAddress.lastSentAtMilliseconds = now
        number = byNumber
        address = byAddress
        return .admitted
    }

    /// `RESOURCE_EXHAUSTED` with `retry-after` (seconds) for a refused send; nil when admitted.
    func refusal(_ decision: PhoneSendDecision, now: Int64) -> RPCError? {
        let until: Int64
        let message: String
        switch decision {
        case .admitted: return nil
        case .cooldown(let time):
            until = time
            message = "rate limit: one code per \(cooldownMilliseconds / 1_000) s to this number"
        case .numberLocked(let time):
            until = time
            message = "rate limit: too many codes to this number (\(perHour) per hour); it is locked"
        case .addressExhausted(let time):
            until = time
            message = "rate limit: too many codes from your address (\(perHour) per hour)"
        }
        return .tryAgainLater(message, untilMilliseconds: until, now: now)
    }
}

/// One number's or address's sends in its current hour.
struct PhoneSendRecord: Sendable, Hashable {
    var windowStartedAtMilliseconds: Int64
    var sends = 0
    var lastSentAtMilliseconds: Int64? = nil
    var lockedUntilMilliseconds: Int64 = 0
}

enum PhoneSendDecision: Sendable, Hashable {
    case admitted
    /// Within the cooldown after the number's last code.
    case cooldown(untilMilliseconds: Int64)
    /// The number had its hour's codes and is locked.
    case numberLocked(untilMilliseconds: Int64)
    /// The address had its hour's codes.
    case addressExhausted(untilMilliseconds: Int64)
}

/// What one send is checked against: the rules and the two records' keys.
struct PhoneSendLimits: Sendable {
    var throttle: PhoneSendThrottle
    var numberKey: [UInt8]
    var addressKey: [UInt8]
}
