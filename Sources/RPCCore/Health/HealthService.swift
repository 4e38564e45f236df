import Synchronization
import YediSync

/// The standard health service (`yedi.health.Health`, modelled on grpc.health.v1) every server hosts.
///
/// The server marks every hosted service (and "" for itself) SERVING once it listens, and
/// NOT_SERVING when it starts shutting down; a service can report trouble with `setStatus`.
public final class HealthService: YediHealth.Health.ServiceProtocol {
    public typealias Status = YediHealth.HealthCheckResponse.ServingStatus

    private struct State {
        var statuses: [String: Status] = [:]
        var watchers: [Int: (service: String, continuation: AsyncStream<Status>.Continuation)] = [:]
        var nextWatcher = 0
    }

    private let state = TSanVisibleMutex(State())

    public init() {}

    /// Sets a service's status ("" for the whole server) and tells its watchers.
    public func setStatus(_ status: Status, for service: String) {
        let watchers = state.withLock { state -> [AsyncStream<Status>.Continuation] in
            guard state.statuses[service] != status else { return [] }
            state.statuses[service] = status
            return state.watchers.values.filter { $0.service == service }.map(\.continuation)
        }
        for watcher in watchers { watcher.yield(status) }
    }

    /// Watches open (for tests).
    var watcherCount: Int { state.withLock { $0.watchers.count } }

    public func status(of service: String) -> Status? {
        state.withLock { $0.statuses[service] }
    }

    public func check(
        _ request: YediHealth.HealthCheckRequest,
        context: ServerContext
    ) async throws -> YediHealth.HealthCheckResponse {
        guard let status = status(of: request.service) else {
            throw RPCError(code: .notFound, message: "unknown service \"\(request.service)\"")
        }
        return .init(status: status)
    }

    public func watch(
        _ request: YediHealth.HealthCheckRequest,
        writer: RPCWriter<YediHealth.HealthCheckResponse>,
        context: ServerContext
    ) async throws {
        // Only the latest status matters to a watcher that reads slowly.
        let (stream, continuation) = AsyncStream.makeStream(of: Status.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state -> Int in
            state.nextWatcher += 1
            state.watchers[state.nextWatcher] = (request.service, continuation)
            continuation.yield(state.statuses[request.service] ?? .serviceUnknown)
            return state.nextWatcher
        }
        defer {
            _ = state.withLock { $0.watchers.removeValue(forKey: id) }
            continuation.finish()
        }
        for await status in stream {
            try await writer.write(.init(status: status))
        }
    }
}
