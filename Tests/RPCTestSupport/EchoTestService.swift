import Foundation
import NIOConcurrencyHelpers
import RPCCore
import YediProto

/// What the test echo service saw, for assertions about the server side of a call.
public final class ServiceProbe: Sendable {
    public init() {}

    private struct State {
        var started: [String] = []
        var finished: [String] = []
        var cancelled: [String] = []
        var streamedMessages = 0
        var peers: [PeerInfo] = []
        var contexts: [String: ServerContext] = [:]
    }

    private let state = NIOLockedValueBox(State())

    public func started(_ text: String, _ context: ServerContext) {
        state.withLockedValue {
            $0.started.append(text)
            $0.peers.append(context.peer)
            $0.contexts[text] = context
        }
    }
    public func finished(_ text: String) { state.withLockedValue { $0.finished.append(text) } }
    public func cancelled(_ text: String) { state.withLockedValue { $0.cancelled.append(text) } }
    public func streamed() { state.withLockedValue { $0.streamedMessages += 1 } }

    public var startedCalls: [String] { state.withLockedValue { $0.started } }
    public var finishedCalls: [String] { state.withLockedValue { $0.finished } }
    public var cancelledCalls: [String] { state.withLockedValue { $0.cancelled } }
    public var streamedMessages: Int { state.withLockedValue { $0.streamedMessages } }
    public var peers: [PeerInfo] { state.withLockedValue { $0.peers } }
    public func context(of text: String) -> ServerContext? { state.withLockedValue { $0.contexts[text] } }
}

public struct SecretInternalFailure: Error, CustomStringConvertible {
    public init() {}

    public var description: String { "database password=hunter2 rejected" }
}

/// `yedi.echo.Echo` with behaviours chosen by the request text:
/// `hang` waits until cancelled; `sleep:<ms>`; `fail:<code>:<message>`; `crash` throws an unexpected error.
///
/// `unavailable`: every echo answers `UNAVAILABLE` whatever its text, as a replica that lost its database
/// does (while it is set; tests flip it to bring the replica back).
public final class EchoTestService: YediEcho.Echo.ServiceProtocol {
    public let probe = ServiceProbe()
    public let unavailable: NIOLockedValueBox<Bool>

    public init(unavailable: Bool = false) {
        self.unavailable = NIOLockedValueBox(unavailable)
    }

    public func echo(_ request: YediEcho.EchoRequest, context: ServerContext) async throws -> YediEcho.EchoResponse {
        probe.started(request.text, context)
        if unavailable.withLockedValue({ $0 }) {
            probe.finished(request.text)
            throw RPCError(code: .unavailable, message: "not serving")
        }
        do {
            let parts = request.text.split(separator: ":", maxSplits: 2).map(String.init)
            switch parts.first {
            case "hang":
                try await Task.sleep(for: .seconds(3600))
            case "sleep":
                try await Task.sleep(for: .milliseconds(Int(parts[1])!))
            case "fail":
                throw RPCError(code: StatusCode(rawValue: UInt8(parts[1])!)!, message: parts.count > 2 ? parts[2] : "")
            case "crash":
                throw SecretInternalFailure()
            default:
                break
            }
        } catch is CancellationError {
            probe.cancelled(request.text)
            throw CancellationError()
        }
        probe.finished(request.text)
        return YediEcho.EchoResponse(payload: request.payload, text: request.text)
    }

    public func expand(
        _ request: YediEcho.ExpandRequest,
        writer: RPCWriter<YediEcho.EchoResponse>,
        context: ServerContext
    ) async throws {
        probe.started(request.text, context)
        let payload = [UInt8](repeating: 0x5A, count: Int(request.payloadSize))
        do {
            for sequence in 0..<request.count {
                try await writer.write(YediEcho.EchoResponse(payload: payload, text: request.text, sequence: sequence))
                probe.streamed()
            }
            if request.text == "hang-after" { try await Task.sleep(for: .seconds(3600)) }
        } catch {
            probe.cancelled(request.text)
            throw error
        }
        probe.finished(request.text)
    }
}

/// Waits until `condition` holds, polling; fails the test (by returning false) after `timeout`.
public func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}
