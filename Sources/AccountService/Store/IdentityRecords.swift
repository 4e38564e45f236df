import RPCAccess

/// A phone verification waiting for the code sent by SMS (`StartPhoneVerification`), kept until
/// `VerifyPhone` uses it or it expires (5 minutes).
struct PhoneVerificationRecord: Sendable, Hashable {
    /// The `verification_id` StartPhoneVerification answered.
    var id: String
    /// The app the number is verified for: a verification of one app proves nothing in another.
    var app: AppID
    /// E.164 (`+821012345678`).
    var phone: String
    /// HMAC-SHA-256 of the code keyed by `id`: the database never holds a code.
    var codeHash: [UInt8]
    var attempts: Int = 0
    var expiresAtMilliseconds: Int64
    var createdAtMilliseconds: Int64
}

/// A verified identity without an account in its app yet: the bearer may create one (with a nickname)
/// until it expires (10 minutes). The database keeps only the ticket's SHA-256.
struct SignUpTicketRecord: Sendable, Hashable {
    /// SHA-256 of the ticket handed to the client.
    var ticketHash: [UInt8]
    /// The app whose account it may create, and no other.
    var app: AppID
    var identity: VerifiedIdentity
    var expiresAtMilliseconds: Int64
}
