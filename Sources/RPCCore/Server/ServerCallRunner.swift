import Logging

/// Runs one call: the handler inside the interceptors, as a task that prefers the connection's event
/// loop, and hands the outcome to the connection once, after the outermost interceptor returned.
///
/// The connection handler only keeps track of calls; this is where a call runs.
@usableFromInline
struct ServerCallRunner: Sendable {
    @usableFromInline let interceptors: [any ServerInterceptor]
    @usableFromInline let executor: EventLoopExecutor
    /// Counts the running handlers, so the server's `run()` returns only after the last one.
    @usableFromInline let registry: ConnectionRegistry

    /// Runs `handler` with `request`, and makes the call's response of what it returns with `respond`.
    /// Generic, so that the typed request and the handler ride in the task's closure: one allocation per
    /// call for both, instead of a closure around the request and another around that.
    @inlinable
    func start<Request: Sendable, Output>(
        _ request: consuming Request,
        handle: consuming ServerCallHandle,
        context: consuming ServerContext,
        handler: @escaping @Sendable (Request, ServerContext) async throws -> Output,
        respond: @escaping RPCRoute.Respond<Output>
    ) -> Task<Void, Never> {
        let interceptors = interceptors
        let registry = registry
        registry.handlerStarted()
        // Runs on this thread until the handler first suspends: a handler that needs no I/O answers
        // within the read that brought its request, and its reply leaves with the others at read-complete.
        return Task.immediate(executorPreference: executor) {
            [request = consume request, handle = consume handle, context = consume context] in
            defer { registry.handlerFinished() }
            do {
                var response: ServerResponse
                if interceptors.isEmpty {
                    // Without interceptors no closure is made for the handler (one allocation fewer).
                    response = try respond(
                        try await ServerContext.$current.withValue(context) { try await handler(request, context) },
                        handle)
                } else {
                    response = try await interceptors.run(context: context) { context in
                        try respond(
                            try await ServerContext.$current.withValue(context) {
                                try await handler(request, context)
                            }, handle)
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

    /// A call that fails with `error` inside the interceptors (a request that does not decode, a
    /// method not implemented yet).
    @inlinable
    func start(failing error: RPCError, handle: consuming ServerCallHandle, context: consuming ServerContext)
        -> Task<Void, Never>
    {
        start(
            error, handle: consume handle, context: consume context,
            handler: { error, _ -> ServerResponse in throw error }, respond: { response, _ in response })
    }

    /// What the caller is told about a failure: an `RPCError` as it is, anything else as INTERNAL
    /// without our internals (logged here instead).
    @usableFromInline
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
