/// What every service's handlers take from the environment alike: the injected clock and id source (so
/// tests are deterministic) and the per-user quotas. One value, so that a handler set declares only its
/// own dependencies, and a new app's handlers get the same three the same way.
public struct HandlerKit: Sendable {
    public let clock: any WallClock
    public let ids: any IDGenerator
    /// Counted inside the stores' transactions (docs/services.md, "Quotas").
    public let quotas: QuotaLimits

    public init(clock: any WallClock, ids: any IDGenerator, quotas: QuotaLimits = .defaults) {
        self.clock = clock
        self.ids = ids
        self.quotas = quotas
    }
}

/// A handler set built on the kit: `clock`, `ids` and `quotas` read as its own.
public protocol HandlerKitUser {
    var kit: HandlerKit { get }
}

extension HandlerKitUser {
    public var clock: any WallClock { kit.clock }
    public var ids: any IDGenerator { kit.ids }
    public var quotas: QuotaLimits { kit.quotas }
}

extension ServiceEnvironment {
    /// The kit of this process's handlers: its clock, ids and configured quotas.
    public var handlerKit: HandlerKit {
        HandlerKit(clock: clock, ids: ids, quotas: configuration.quotas)
    }
}
