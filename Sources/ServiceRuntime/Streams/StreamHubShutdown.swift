import ServiceLifecycle

/// Stops a hub when graceful shutdown begins. Register it with `env.addDrainingService`: it runs after
/// the RPC server, so it is told first (services stop in reverse order), and open streams end at once
/// with UNAVAILABLE instead of holding the server's drain until its grace period runs out.
public struct StreamHubShutdown<Event: PositionedEvent>: Service {
    public let hub: StreamHub<Event>

    public init(hub: StreamHub<Event>) {
        self.hub = hub
    }

    public func run() async throws {
        try? await gracefulShutdown()
        hub.shutDown()
    }
}
