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
    /// What interceptors keep per connection (RPCAccess: the failed-authentication budget), by type.
    private let states = TSanVisibleMutex<[ObjectIdentifier: any AnyObject & Sendable]>([:])

    public init(address: String, identity: PeerIdentity? = nil) {
        self.address = address
        self.identity = identity
    }

    /// The connection's one `State`, made by `make` on first use: state an interceptor keeps per connection
    /// (RPCAccess keeps the failed-authentication budget here), which lives exactly as long as the connection.
    public func connectionState<State: AnyObject & Sendable>(
        _ type: State.Type = State.self,
        orMake make: () -> State
    ) -> State {
        states.withLock { states in
            if let existing = states[ObjectIdentifier(type)] as? State { return existing }
            let made = make()
            states[ObjectIdentifier(type)] = made
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
