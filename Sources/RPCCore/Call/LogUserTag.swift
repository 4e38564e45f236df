/// How logs name a user: a tag (`h:3f9a…`) derived from the id with a key, never the id itself.
///
/// Logs outlive accounts (a deleted user's id would stay in every request line for the logs' whole
/// retention); a keyed tag still lets an operator follow one user's calls, and find them given the id
/// and the key, while the logs alone name nobody. Services use an HMAC-SHA256 with the deployment's key
/// (`ServiceRuntime`); without one, a tag keyed by this process's random hash seed.
public struct LogUserTag: Sendable {
    private let tag: @Sendable (String) -> String

    public init(_ tag: @escaping @Sendable (String) -> String) {
        self.tag = tag
    }

    public func callAsFunction(_ userID: String) -> String { tag(userID) }

    /// Keyed by the process's random `Hasher` seed: tags differ after a restart, and cannot be reversed.
    public static let perProcess = LogUserTag { id in
        var hasher = Hasher()
        hasher.combine(id)
        return "h:" + String(UInt64(bitPattern: Int64(hasher.finalize())), radix: 16)
    }
}
