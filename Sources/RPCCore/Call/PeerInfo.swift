import RPCTLS
import YediSync

/// Who is on the other end of a call's connection.
///
/// A class: made once per connection and shared by the context of each of its calls.
public final class PeerInfo: Sendable, Hashable, CustomStringConvertible {
    /// `[IPv4]127.0.0.1/127.0.0.1:53412`, for logs.
    public let address: String
    /// The verified client certificate's identity (mutual TLS), if the client sent one.
    public let identity: PeerIdentity?
    /// What interceptors keep per connection (RPCAccess: the failed-authentication budget; AccessTokens:
    /// the last token's claims), by type. A list: there are one or two, and a signed-in call looks one up,
    /// so a scan beats hashing the key.
    @usableFromInline let states = TSanVisibleMutex<[(type: ObjectIdentifier, state: any AnyObject & Sendable)]>([])

    public init(address: String, identity: PeerIdentity? = nil) {
        self.address = address
        self.identity = identity
    }

    /// The connection's one `State`, made by `make` on first use: state an interceptor keeps per connection,
    /// which lives exactly as long as the connection. Inlinable, so that it is specialized for its state
    /// where it is called: unspecialized, its lock looked up generic metadata on every call.
    @inlinable
    public func connectionState<State: AnyObject & Sendable>(
        _ type: State.Type = State.self,
        orMake make: () -> State
    ) -> State {
        let key = ObjectIdentifier(State.self)
        return states.withLock { states in
            for entry in states where entry.type == key {
                // Stored under `State.self`'s identifier (not the metatype passed, which may be a
                // subclass's), so the cast cannot fail.
                return unsafeDowncast(entry.state, to: State.self)
            }
            let made = make()
            states.append((key, made))
            return made
        }
    }

    public var description: String {
        identity.map { "\(address) (\($0))" } ?? address
    }

    public static func == (lhs: PeerInfo, rhs: PeerInfo) -> Bool {
        lhs.address == rhs.address && lhs.identity == rhs.identity
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(address)
        hasher.combine(identity)
    }
}
