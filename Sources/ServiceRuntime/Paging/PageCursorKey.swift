import YediCrypto

/// The key page cursors are signed with (`PageList`).
///
/// Derived from the service's deployment key (the `--log-key` file, else `<data>/log.key`, made on first
/// start) rather than made per process: a cursor must survive a restart, and replicas sharing that key
/// accept each other's cursors. Derived, so the log tags and the cursors never use the same key.
public struct PageCursorKey: Sendable {
    let bytes: [UInt8]

    public init(deriving secret: [UInt8]) {
        bytes = HMACSHA256.mac(key: secret, Array("yedi page cursor key v1".utf8))
    }

    /// A fixed key, for tests that build lists without a service.
    public static let forTests = PageCursorKey(deriving: Array("tests".utf8))
}
