import Logging
import RPCAccess
import RPCCore
import YediProto

/// `yedi.runtime.DevClock`: moves a development process's clock forward, so an end-to-end test can reach
/// "the reservation's time has passed" without waiting.
///
/// Hosted by every service process, and refused (`FAILED_PRECONDITION`) unless the process was started
/// with `--dev-clock`, which it announces in its log at start.
struct DevClockService: YediRuntime.DevClock.ServiceProtocol {
    /// Nil unless started with `--dev-clock`.
    let clock: AdjustableClock?
    let logger: Logger

    /// Ten years: far enough for any test, small enough that dates stay sane.
    static let maximumStepSeconds: Int64 = 10 * 366 * 24 * 3_600

    func advanceClock(
        _ request: YediRuntime.AdvanceClockRequest,
        context: ServerContext
    ) async throws -> YediRuntime.AdvanceClockResponse {
        guard let clock else {
            throw RPCError(
                code: .failedPrecondition,
                message: "this process's clock cannot be moved: it was not started with --dev-clock (YEDI_DEV_CLOCK=1)"
            )
        }
        guard request.seconds > 0, request.seconds <= Self.maximumStepSeconds else {
            throw RPCError(
                code: .invalidArgument,
                message: "seconds must be from 1 to \(Self.maximumStepSeconds): the clock only moves forward"
            )
        }
        let offset = clock.advance(by: Double(request.seconds))
        logger.warning(
            "development clock moved forward",
            metadata: [
                "by-seconds": "\(request.seconds)", "offset-seconds": "\(Int64(offset))", "caller": "\(context.caller)",
            ]
        )
        return YediRuntime.AdvanceClockResponse(nowMs: clock.nowMilliseconds, offsetSeconds: Int64(offset))
    }
}
