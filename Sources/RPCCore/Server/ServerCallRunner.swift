import Logging

/// Runs one call: the handler inside the interceptors, as a task that prefers the connection's event
/// loop, and hands the outcome to the connection once, after the outermost interceptor returned.
///
/// The connection handler only keeps track of calls; this is where a call runs.
struct ServerCallRunner: Sendable {
    let interceptors: [any ServerInterceptor]
    let executor: EventLoopExecutor
    /// Counts the running handlers, so the server's `run()` returns only after the last one.
    let registry: ConnectionRegistry

    func start(
        _ call: @escaping RPCRoute.PreparedCall,
        handle: ServerCallHandle,
        context: ServerContext
    ) -> Task<Void, Never> {
        let interceptors = interceptors
        let registry = registry
        registry.handlerStarted()
        // Runs on this thread until the handler first suspends: a handler that needs no I/O answers
        // within the read that brought its request, and its reply leaves with the others at read-complete.
        return Task.immediate(executorPreference: executor) {
            defer { registry.handlerFinished() }
            do {
                var response: ServerResponse
                if interceptors.isEmpty {
                    // Without interceptors no closure is made for the handler (one allocation fewer).
                    response = try await ServerContext.$current.withValue(context) { try await call(handle, context) }
                } else {
                    response = try await interceptors.run(context: context) { context in
                        try await ServerContext.$current.withValue(context) { try await call(handle, context) }
                    }
                }
                // Finished here, where this task holds the only copy of the frame: appending the
                // trailers then writes after the response in place instead of copying it.
                handle.handlerReturned(response.takeEndFrame(callID: handle.id))
            } catch {
                handle.handlerReturned(.failed(Self.status(of: error, logger: context.logger)))
            }
        }
    }

    /// What the caller is told about a failure: an `RPCError` as it is, anything else as INTERNAL
    /// without our internals (logged here instead).
    static func status(of error: any Error, logger: Logger) -> RPCError {
        switch error {
        case let error as RPCError:
            return error
        case is CancellationError:
            return RPCError(code: .cancelled, message: "the call was cancelled")
        default:
            logger.error("handler failed: \(error)")
            return RPCError(code: .internalError, message: "internal error")
        }
    }
}
