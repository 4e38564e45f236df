import RPCCore

/// The two limits an anonymous, costly RPC is held to: per client address and per connection.
///
/// Per address, because that is what an attacker cannot cheaply multiply; per connection as well, so one
/// connection cannot spend its address's whole allowance (a NAT shares an address among honest users).
/// A refused call gets `RESOURCE_EXHAUSTED` with `retry-after` (whole seconds) at once: it costs no work.
public struct ClientRateLimits: Sendable {
    public let perAddress: SharedRateLimiter<String>
    public let perConnection: SharedRateLimiter<String>

    public init(perAddress: RateLimit, perConnection: RateLimit, maximumKeys: Int = 10_000) {
        self.perAddress = SharedRateLimiter(limit: perAddress, maximumKeys: maximumKeys)
        self.perConnection = SharedRateLimiter(limit: perConnection, maximumKeys: maximumKeys)
    }

    /// Charges one call of `peer` at `now` (seconds, the service's clock) and returns the client's address
    /// key (`ClientAddress.key(of:)`); throws `RESOURCE_EXHAUSTED` when either limit is spent.
    ///
    /// The connection is checked first, so a connection over its own limit spends nothing of its
    /// address's allowance.
    @discardableResult
    public func admit(_ peer: PeerInfo, now: Double) throws(RPCError) -> String {
        let address = ClientAddress.key(of: peer.address)
        let connection = perConnection.take(peer.address, now: now)
        if let seconds = connection.retryAfter {
            throw Self.refusal("this connection", perConnection.limit, seconds)
        }
        let fromAddress = perAddress.take(address, now: now)
        if let seconds = fromAddress.retryAfter {
            throw Self.refusal("your address", perAddress.limit, seconds)
        }
        return address
    }

    static func refusal(_ whose: String, _ limit: RateLimit, _ seconds: Int) -> RPCError {
        .tryAgainLater(
            "rate limit: too many costly calls from \(whose) (at most \(limit.burst) per \(Int(limit.period.seconds)) s)",
            inSeconds: seconds)
    }
}
