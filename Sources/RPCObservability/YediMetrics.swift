import CoreMetrics
import Prometheus

/// The process-wide metrics backend: swift-metrics reporting into one Prometheus registry.
public enum YediMetrics {
    /// Swift runs a static's initializer exactly once, even when first touched from several threads at once,
    /// which is what makes the bootstrap below happen once per process.
    private static let prometheusRegistry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()

    /// Makes swift-metrics report to Prometheus and returns the registry that `/metrics` renders (hand it to
    /// ``ObservabilityServer``).
    ///
    /// Calls `MetricsSystem.bootstrap` on the first call only; later calls return the same registry, so a
    /// second call is harmless. Call it early in `main`: metrics made before it (an ``LRUCache`` with the default
    /// factory, say) stay bound to the no-op backend.
    ///
    /// - Important: swift-metrics allows a single bootstrap per process; bootstrapping it anywhere else as well
    ///   is a crash.
    @discardableResult
    public static func bootstrapPrometheus() -> PrometheusCollectorRegistry {
        prometheusRegistry
    }
}
