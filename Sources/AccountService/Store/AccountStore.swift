import RPCAccess
import RPCCore
import YediProto

/// Where AccountService keeps its data. Handlers see only this protocol (the SQLite implementation is
/// `SQLiteAccountStore`), so a second engine can replace it and the same store tests run against both.
///
/// Every method is one transaction.
protocol AccountStore: Sendable {
    // MARK: Users and designers

    /// Adds a user (and their designer profile and shop); `AccountStoreError.emailTaken` if the email exists.
    func createUser(_ user: UserRecord, designer: DesignerRecord?, session: SessionRecord) async throws
    func user(id: String) async throws -> UserRecord?
    /// Whether a member of `app` has `nickname` (case-insensitively): advice for a sign-up screen; the
    /// unique index decides at creation.
    func nicknameTaken(_ nickname: String, app: AppID) async throws -> Bool
    /// The account of `email` in `app` (the same address in another app is another account).
    func user(app: AppID, email: String) async throws -> UserRecord?
    /// The users among `ids` that exist, in no particular order.
    func users(ids: [String]) async throws -> [UserRecord]
    /// The shops of the designers among `ids` (customers and unknown ids are left out).
    func shopCards(designerIDs ids: [String]) async throws -> [String: ShopCardRecord]
    /// Housetainer's member types (H, h, a) of the members among `ids` (others are left out).
    func memberTypes(userIDs ids: [String]) async throws -> [String: String]
    func designer(id: String) async throws -> (UserRecord, DesignerRecord)?
    /// Replaces the user's fields; when a public one (name, profile image) changed, the services that
    /// cache them are told (`UserChanged` through the outbox) in the same transaction.
    func updateUser(_ user: UserRecord) async throws
    /// Replaces the designer's profile and shop (the follower count is the store's own and is kept); when
    /// what a card shows changed (shop name, city, district), the services that cache it are told.
    func updateDesigner(_ designer: DesignerRecord) async throws

    // MARK: Sign-ups waiting for their mailed code

    /// Keeps `pending` (nil when the address has an account already) and queues `mail` to the address,
    /// in one transaction.
    func startSignUp(_ pending: PendingSignUpRecord?, mail: YediRuntime.MailMessage) async throws
    /// The sign-up `id` if `codeHash` is its code, it has not expired at `now` and has tries left; a
    /// wrong code spends one of its `maximumAttempts` tries. Nil for every refusal alike.
    func checkSignUpCode(id: String, codeHash: [UInt8], now: Int64, maximumAttempts: Int) async throws
        -> PendingSignUpRecord?
    /// Creates the account of sign-up `id` and removes the sign-up, in one transaction:
    /// `AccountStoreError.notFound` if it is gone (completed meanwhile), `.emailTaken` if the address
    /// got an account meanwhile.
    func completeSignUp(id: String, user: UserRecord, designer: DesignerRecord?, session: SessionRecord) async throws
    /// Deletes the sign-ups and password resets that expired before `expiredBefore`; answers how many.
    func pruneSignUps(expiredBefore: Int64) async throws -> Int

    // MARK: Passwords

    /// Keeps `reset` and queues `mail` (its code; nil when the address has no account), in one transaction.
    func startPasswordReset(_ reset: PasswordResetRecord, mail: YediRuntime.MailMessage?) async throws
    /// The reset `id` of `app` if `codeHash` is its code, it has not expired at `now` and has tries left; a
    /// wrong code spends one of its `maximumAttempts` tries. Nil for every refusal alike.
    func checkPasswordResetCode(id: String, app: AppID, codeHash: [UInt8], now: Int64, maximumAttempts: Int)
        async throws -> PasswordResetRecord?
    /// Sets the password, uses the reset up (if any), ends every session of the user, revokes their access
    /// tokens here and, through the outbox, in every peer, starts the new session and queues the notice,
    /// in one transaction. `AccountStoreError.notFound` if the reset or the user is gone.
    func replacePassword(_ replacement: PasswordReplacement) async throws

    // MARK: Verified identities (phone numbers, provider accounts)

    /// The account of `app` that `identity` is linked to, if any.
    func user(app: AppID, identity: VerifiedIdentity) async throws -> UserRecord?
    /// The provider and phone identities linked to the user (re-authentication checks a proof against them).
    func identities(userID: String) async throws -> [VerifiedIdentity]
    /// Keeps `verification` and queues `sms` (its code) in one transaction, if `limits` admit a send to
    /// its number from the caller's address now (`PhoneSendThrottle`, counted in the same transaction);
    /// otherwise sends nothing and answers the refusal (a lock it starts is kept).
    func startPhoneVerification(
        _ verification: PhoneVerificationRecord, sms: YediRuntime.SmsMessage, limits: PhoneSendLimits
    ) async throws -> PhoneSendDecision
    /// The verification `id` of `app` if `codeHash` is its code, it has not expired at `now` and has tries
    /// left; a right code uses it up (it proves the number once), a wrong one spends one of its
    /// `maximumAttempts` tries. Nil for every refusal alike.
    func checkPhoneCode(id: String, app: AppID, codeHash: [UInt8], now: Int64, maximumAttempts: Int) async throws
        -> PhoneVerificationRecord?
    func createSignUpTicket(_ ticket: SignUpTicketRecord) async throws
    /// The ticket of `app` with this hash, if it has not expired at `now` (it stays until used).
    func signUpTicket(hash: [UInt8], app: AppID, now: Int64) async throws -> SignUpTicketRecord?
    /// Creates `user` (no password) linked to `ticket`'s identity, with its first session, and uses the
    /// ticket up, in one transaction: `AccountStoreError.notFound` if the ticket is gone or expired at
    /// `now`, `.identityTaken` if the identity got an account meanwhile, `.nicknameTaken`.
    func completeIdentitySignUp(ticket: SignUpTicketRecord, user: UserRecord, session: SessionRecord, now: Int64)
        async throws
    /// Deletes the phone verifications and sign-up tickets that expired before `expiredBefore`, and the
    /// send limits' records whose hour and lock ended before it.
    func pruneIdentityVerifications(expiredBefore: Int64) async throws -> Int

    // MARK: Sessions

    func createSession(_ session: SessionRecord) async throws
    /// Exchanges a refresh token for `next` (same family), or says why not. A token already used
    /// revokes its whole family.
    func rotateSession(refreshHash: [UInt8], next: SessionRecord, now: Int64) async throws -> SessionRotation
    /// Revokes the family of the token, if it is known, and removes the push devices it registered.
    /// Returns whether it was.
    @discardableResult
    func revokeFamily(refreshHash: [UInt8], now: Int64) async throws -> Bool
    /// Deletes the session rows that expired or were revoked before `deadBefore`; answers how many.
    /// Used rows that have not expired stay: presenting one again is how a stolen token is noticed.
    func pruneSessions(deadBefore: Int64) async throws -> Int

    // MARK: Password attempts (the sign-in throttle)

    /// Reads the (account, address) record and the account's backstop, lets `throttle` decide the
    /// attempt at `now` and writes what it changed, in one transaction: concurrent attempts are decided
    /// one after the other. An admitted attempt is already counted as a failure.
    func beginPasswordAttempt(
        account: String, address: String, now: Int64, throttle: SignInThrottle
    ) async throws -> ThrottleDecision
    /// Gives back an admitted attempt's failure (`SignInThrottle.end`), in one transaction.
    func endPasswordAttempt(
        account: String, address: String, outcome: PasswordAttemptOutcome, throttle: SignInThrottle
    ) async throws
    /// The (account, address) record and the account's backstop as stored (tests, support).
    func passwordAttempts(account: String, address: String) async throws -> ThrottleState

    // MARK: Follows

    /// Idempotent; returns the designer's follower count. `AccountStoreError.notFound` if no such designer.
    func follow(customerID: String, designerID: String, now: Int64) async throws -> Int64
    func unfollow(customerID: String, designerID: String) async throws -> Int64
    /// Most recently followed first, after `position` (the follow time and designer id of the last one seen).
    func following(customerID: String, after position: ListPosition?, limit: Int) async throws -> [(
        DesignerSummaryRecord, ListPosition
    )]
    func followedDesignerIDs(userID: String) async throws -> [String]

    // MARK: Search

    /// Designers whose name, shop name or district contains `query` (case-insensitive), best first:
    /// exact name, then names starting with it, then names containing it, then shop or district matches.
    func searchDesigners(query: String, after position: ListPosition?, limit: Int) async throws -> [(
        DesignerSummaryRecord, ListPosition
    )]

    // MARK: Recent searches

    /// Records (or moves to the top) an entry and keeps the newest `keep`; returns the list, newest first.
    func recordRecentSearch(
        userID: String, kind: RecentSearchKind, value: String, id: String, now: Int64, keep: Int
    ) async throws -> [RecentSearchRecord]
    func recentSearches(userID: String) async throws -> [RecentSearchRecord]
    /// Deletes one entry (`id`), or all of them (`id` nil).
    func deleteRecentSearches(userID: String, id: String?) async throws -> [RecentSearchRecord]

    // MARK: Deletion

    /// Removes everything AccountService holds of the user (sessions, follows both ways with the counts
    /// they changed, recent searches, shop, profile, push devices and notifications), revokes their tokens as of `now` and, in the same
    /// transaction, schedules `RevokeUser` then `PurgeUser` on every peer that holds user data. Returns
    /// false if there was no such user.
    func deleteAccount(userID: String, now: Int64) async throws -> Bool
    /// The push tokens of the user's devices (deletion forgets the development push files to them).
    func deviceTokens(userID: String) async throws -> [String]
}

enum SessionRotation: Sendable, Equatable {
    case rotated(userID: String, familyID: String)
    case reused
    case expired
    case unknown
}

enum AccountStoreError: Error, Equatable {
    case emailTaken
    /// The nickname is another account's in the same app (compared case-insensitively).
    case nicknameTaken
    /// The verified identity is linked to another account of the app already.
    case identityTaken
    case notFound
}
