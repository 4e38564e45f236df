import RPCTestSupport
import YediProto

@testable import RPCCore

/// Serves `yedi.echo.Echo/Echo` (or another method of Echo) with one handler on the request's bytes, for behaviours the echo test
/// service cannot produce (statuses no client could send, handlers that ignore cancellation).
/// A streaming `method` (Expand) ends OK when the handler returns.
struct RawHandlerService: RPCService {
    var method = YediEcho.Echo.Method.echo.descriptor
    let handler: @Sendable (_ payload: [UInt8], _ context: ServerContext) async throws -> [UInt8]

    var serviceDescriptor: ServiceDescriptor { YediEcho.Echo.descriptor }

    func registerMethods(with router: inout RPCRouter) {
        router.registerRaw(method, handler: handler)
    }
}

/// Holds handlers until the test opens it, ignoring cancellation: a handler that keeps running after
/// its call was cancelled or expired. Counts the handlers that entered and that are still inside.
final class HandlerGate: Sendable {
    private struct State {
        var open = false
        var entered = 0
        var inside = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = LockedValue(State())

    var entered: Int { state.value.entered }
    var inside: Int { state.value.inside }

    func pass() async {
        await withCheckedContinuation { continuation in
            let passNow = state.withLock { state -> Bool in
                state.entered += 1
                state.inside += 1
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if passNow { continuation.resume() }
        }
        state.withLock { $0.inside -= 1 }
    }

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
