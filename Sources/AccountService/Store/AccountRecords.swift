import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// What the store keeps of a user: plain values, so handlers and tests never see the database's types.
struct UserRecord: Sendable, Hashable {
    var id: String
    var role: UserRole
    /// The app the account belongs to, and the only one it can use: the same address in two apps is two
    /// accounts.
    var app: AppID = .yedi
    /// Lowercased; "" for an account without one (phone or provider sign-in). Unique within the app.
    var email: String
    var name: String
    var phone: String
    var gender: Int
    var birthDate: DateParts?
    var profileImageID: String = ""
    var favouriteStyle: String = ""
    /// The encoded scrypt hash (`$scrypt$ln=…$salt$hash`); nil for an account without a password.
    var passwordHash: String?
    var createdAtMilliseconds: Int64
    /// Unique within the app (for the apps that show nicknames); nil where the app has none.
    var nickname: String? = nil
    /// Set by an operator (`Moderation/SuspendMember`): sign-in is refused until then.
    var suspendedUntilMilliseconds: Int64? = nil

    /// The sign-in throttle's account key of `email` in `app` (`password_attempt.account`): the address
    /// alone for YeDi, as before apps; `<app>/<address>` for the others, so one app's failures never lock
    /// the same address out of another.
    static func signInAccount(app: AppID, email: String) -> String {
        app == .yedi ? email : "\(app)/\(email)"
    }
}

/// A sign-up waiting for the code mailed to its address: what SignUp was given, kept until
/// CompleteSignUp (or 15 minutes). No account exists yet.
struct PendingSignUpRecord: Sendable, Hashable {
    /// The `verification_id` SignUp answered.
    var id: String
    /// Lowercased.
    var email: String
    /// The app the account will belong to (the app SignUp was called in).
    var app: AppID = .yedi
    /// The `SignUpRequest` as sent, without its password; its fields are checked again on completion.
    var request: [UInt8]
    var passwordHash: String
    /// HMAC-SHA-256 of the code keyed by `id`: the database never holds a code.
    var codeHash: [UInt8]
    var attempts: Int = 0
    var expiresAtMilliseconds: Int64
    var createdAtMilliseconds: Int64
}

/// A password reset waiting for the code mailed to its address (15 minutes). Kept for an address without
/// an account too (with no user), so both answers cost the same and the code check refuses both alike.
struct PasswordResetRecord: Sendable, Hashable {
    /// The `reset_id` RequestPasswordReset answered.
    var id: String
    var app: AppID
    /// The account whose password the code resets; nil when the address has none in `app`.
    var userID: String?
    /// HMAC-SHA-256 of the code keyed by `id`, as for sign-up codes.
    var codeHash: [UInt8]
    var attempts: Int = 0
    var expiresAtMilliseconds: Int64
    var createdAtMilliseconds: Int64
}

/// A new password for an account (reset by a mailed code, or changed with the current one): what the
/// store writes in one transaction.
struct PasswordReplacement: Sendable {
    var userID: String
    var passwordHash: String
    /// The reset it uses up (`AccountStoreError.notFound` when it is gone), or nil for a change.
    var resetID: String?
    /// The caller's new session; every other session of the user ends.
    var session: SessionRecord
    /// Access tokens of the user issued up to this instant are refused everywhere.
    var revokedAtMilliseconds: Int64
    /// Tells the address's owner that the password changed.
    var notice: YediRuntime.MailMessage?
}

struct DateParts: Sendable, Hashable {
    var year: Int
    var month: Int
    var day: Int
}

struct DesignerRecord: Sendable, Hashable {
    var userID: String
    var description: String
    var skills: [String]
    var rank: Int
    /// Kept by the store, changed only with a follow or unfollow.
    var followerCount: Int64 = 0
    var shop: ShopRecord
}

struct ShopRecord: Sendable, Hashable {
    var name: String
    var phone: String
    var city: String
    var district: String
    var detail: String
    var latitude: Double
    var longitude: Double
    var openingHour: Int
    var closingHour: Int
    var messengerLinks: [MessengerLinkRecord]
    var timeZone: String
}

/// What a card shows of a designer's shop beside their name (`PublicUser.shop_name`, `shop_area`).
struct ShopCardRecord: Sendable, Hashable {
    var name: String
    var city: String
    var district: String

    var area: String { [city, district].filter { !$0.isEmpty }.joined(separator: " ") }
}

struct MessengerLinkRecord: Sendable, Hashable, Codable {
    var kind: String
    var url: String
}

/// A designer as lists show them (search, follows).
struct DesignerSummaryRecord: Sendable, Hashable {
    var user: UserRecord
    var rank: Int
    var shopName: String
    var district: String
    var followerCount: Int64
}

/// One refresh token's row. Tokens rotate: each refresh marks its row used and adds the next one to the
/// same family; a used token shown again means it was stolen, and the whole family is revoked.
struct SessionRecord: Sendable, Hashable {
    var id: String
    var familyID: String
    var userID: String
    /// SHA-256 of the refresh token: a leaked database does not leak usable tokens.
    var refreshHash: [UInt8]
    var createdAtMilliseconds: Int64
    var expiresAtMilliseconds: Int64
}

/// Failed password attempts for one account from one client address (or from all of them, the account's
/// backstop), kept in the database so a restart does not reset them.
struct ThrottleRecord: Sendable, Hashable {
    var failures: Int
    var windowStartedAtMilliseconds: Int64
    /// For a pair, the end of its lockout; for an account's backstop, when the next attempt from a new
    /// address may start while the account is slowed.
    var lockedUntilMilliseconds: Int64
    /// The account signed in from this address: the backstop does not slow it.
    var known: Bool = false

    init(failures: Int = 0, windowStartedAtMilliseconds: Int64, lockedUntilMilliseconds: Int64 = 0, known: Bool = false)
    {
        self.failures = failures
        self.windowStartedAtMilliseconds = windowStartedAtMilliseconds
        self.lockedUntilMilliseconds = lockedUntilMilliseconds
        self.known = known
    }

    /// No failures yet, a window starting at `now`.
    init(now: Int64, known: Bool = false) {
        self.init(windowStartedAtMilliseconds: now, known: known)
    }
}

enum RecentSearchKind: String, Sendable {
    case query
    case designer
}

struct RecentSearchRecord: Sendable, Hashable {
    var id: String
    var kind: RecentSearchKind
    var value: String
    var searchedAtMilliseconds: Int64
}

/// A position in a list ordered by a text key (a name) and then an id; encoded in the opaque page cursor.
typealias ListPosition = PagePosition<String>
