import CoreMetrics
import Prometheus
import RPCObservability
import XCTest

/// `YediMetrics.bootstrapPrometheus()` bootstraps the process-wide metrics system once, however often it is
/// called. This bootstraps the real global system of the test process, which swift-metrics allows only once, so
/// it is the one test that does.
final class ObservabilityMetricsBootstrapTests: XCTestCase {
    func testBootstrapHappensOnceAndFeedsTheRegistry() {
        let registry = YediMetrics.bootstrapPrometheus()
        XCTAssertTrue(YediMetrics.bootstrapPrometheus() === registry, "a second call returns the same registry")

        CoreMetrics.Counter(label: "yedi_bootstrap_test_total").increment()
        XCTAssertTrue(registry.emitToString().contains("yedi_bootstrap_test_total 1\n"), registry.emitToString())
    }
}
