import Logging
import Prometheus
import RPCObservability
import Synchronization

/// The health a test server reports, flipped by the test.
final class HealthFlag: Sendable {
    private let serving = Atomic<Bool>(true)

    var isServing: Bool { serving.load(ordering: .relaxed) }

    func set(_ isServing: Bool) {
        serving.store(isServing, ordering: .relaxed)
    }
}

extension ObservabilityServer {
    /// A server on an ephemeral loopback port.
    static func forTesting(
        registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
        health: HealthFlag = HealthFlag(),
        maxRequestBodyBytes: Int = 64 * 1024
    ) -> ObservabilityServer {
        ObservabilityServer(
            configuration: Configuration(host: "127.0.0.1", port: 0, maxRequestBodyBytes: maxRequestBodyBytes),
            registry: registry,
            logger: Logger(label: "yedi.observability.test"),
            isServing: { health.isServing }
        )
    }

    /// Runs the server for the duration of `body`, which gets the bound port; then cancels it and waits for
    /// `run()` to return.
    func whileRunning<Result: Sendable>(_ body: (Int) async throws -> Result) async throws -> Result {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.run() }
            do {
                let result = try await body(try await port)
                group.cancelAll()
                try await group.waitForAll()
                return result
            } catch {
                group.cancelAll()
                throw error
            }
        }
    }
}
