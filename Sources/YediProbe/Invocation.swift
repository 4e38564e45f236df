import Dispatch
import Foundation
import ProtoBridge
import RPCCore
import RPCTLS
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One call to a server, as `call` and `health` make it: connect and wait for the connection (so that
/// TLS and connection failures are reported as such, not as `UNAVAILABLE`), send the request, hand each
/// reply to `onReply`, and let Ctrl-C cancel the call on the server before exiting 130.
struct Invocation {
    let address: Address
    let method: ProbeMethod
    let connection: ConnectionOptions

    /// Runs the call; every failure comes out as a `ProbeError` with its exit status.
    func run(request: DynamicMessage, onReply: @escaping @Sendable (DynamicMessage) throws(ProbeError) -> Void)
        async throws(ProbeError)
    {
        guard let descriptor = method.descriptor else {
            throw ProbeError(
                "\(method.fullName) has no generated descriptor, so its streaming kind is unknown: "
                    + "regenerate the bindings with proto/generate.sh",
                exitCode: ExitStatus.unknownName
            )
        }
        let payload: [UInt8]
        do {
            payload = try request.serializedBytes()
        } catch {
            throw ProbeError("the request cannot be encoded: \(error)", exitCode: ExitStatus.jsonDoesNotFit)
        }
        let configuration = try connection.clientConfiguration(address: address)
        let metadata: Metadata
        do {
            metadata = try connection.metadata()
        } catch {
            throw .usage("\(error)")
        }
        let options = CallOptions(timeout: connection.callTimeout(for: descriptor.kind), metadata: metadata)
        narrateStart(configuration, descriptor, options)

        let interrupts = Interrupts.stream()
        let timer = CallTimer()
        let connectTimeout = connection.connectTimeout
        let verbose = connection.verbose
        let output = method.output
        do {
            try await withRPCClient(configuration: configuration) { client in
                try await Self.cancellable(by: interrupts) {
                    do throws(RPCConnectionError) {
                        try await client.waitUntilReady(timeout: connectTimeout)
                    } catch {
                        throw ProbeError(connecting: error)
                    }
                    let connecting = timer.restart()
                    if verbose { Output.errorLine("* connected in \(Self.milliseconds(connecting))") }
                    // --timeout is a deadline for the whole invocation: connecting spent part of it.
                    var callOptions = options
                    callOptions.timeout = options.timeout.map { max($0 - connecting, .zero) }
                    let trailers = try await Self.call(
                        client,
                        descriptor,
                        payload: payload,
                        options: callOptions,
                        output: output,
                        onReply: onReply
                    )
                    Self.narrateEnd(verbose: verbose, status: "OK", trailers: trailers, elapsed: timer.elapsed)
                }
            }
        } catch let error as ProbeError {
            throw error
        } catch let error as RPCError {
            narrateEnd(status: error.code.name, trailers: error.metadata, elapsed: timer.elapsed)
            throw .rpc(error)
        } catch let error as TLSError {
            throw ProbeError(settingUp: error)
        } catch is CancellationError {
            throw .interrupted
        } catch {
            throw .rpc(RPCError(code: .unknown, message: "\(error)"))
        }
    }

    /// Sends the request and hands each reply to `onReply`; returns the trailers.
    private static func call(
        _ client: RPCClient,
        _ descriptor: MethodDescriptor,
        payload: [UInt8],
        options: CallOptions,
        output: MessageSchema,
        onReply: @escaping @Sendable (DynamicMessage) throws(ProbeError) -> Void
    ) async throws -> Metadata {
        switch descriptor.kind {
        case .unary:
            let reply = try await client.unary(descriptor, payload: payload, options: options)
            try onReply(try decode(reply.payload, as: output))
            return reply.trailers
        case .serverStreaming:
            return try await client.serverStreaming(descriptor, payload: payload, options: options) { stream in
                for try await message in stream {
                    try onReply(try decode(message, as: output))
                }
                return stream.trailers ?? [:]
            }
        }
    }

    /// A reply the schema cannot read is the call's failure, as it is for generated clients.
    private static func decode(_ bytes: [UInt8], as schema: MessageSchema) throws(RPCError) -> DynamicMessage {
        do {
            return try DynamicMessage(schema: schema, serializedBytes: bytes)
        } catch {
            throw RPCError(code: .internalError, message: "the response could not be decoded: \(error)")
        }
    }

    /// Runs `body` until it returns, or until Ctrl-C: then cancels it (which cancels the call on the
    /// server), waits for it to unwind, and throws `ProbeError.interrupted`.
    private static func cancellable(
        by interrupts: AsyncStream<Void>,
        _ body: @escaping @Sendable () async throws -> Void
    ) async throws {
        let interrupted = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await body()
                return false
            }
            group.addTask {
                for await _ in interrupts { return true }
                return false
            }
            defer { group.cancelAll() }
            return try await group.next() ?? false
        }
        if interrupted { throw ProbeError.interrupted }
    }

    // MARK: --verbose

    private func narrateStart(
        _ configuration: ClientConfiguration, _ descriptor: MethodDescriptor, _ options: CallOptions
    ) {
        guard connection.verbose else { return }
        let tls = configuration.tls
        var identity = "no client certificate"
        if let certificate = tls.certificateChainFile { identity = "client certificate \(certificate)" }
        Output.errorLine(
            "* connecting to \(address) (server name \(configuration.serverName ?? address.first.host), "
                + "CA \(tls.trustRootsFile ?? "system"), \(identity))"
        )
        let timeout = options.timeout.map { "timeout \(Self.seconds($0))" } ?? "no timeout"
        Output.errorLine("* calling \(descriptor.fullName) (\(descriptor.kind), \(timeout))")
        for line in ConnectionOptions.describe(options.metadata, direction: ">") { Output.errorLine(line) }
    }

    private func narrateEnd(status: String, trailers: Metadata, elapsed: Duration) {
        Self.narrateEnd(verbose: connection.verbose, status: status, trailers: trailers, elapsed: elapsed)
    }

    private static func narrateEnd(verbose: Bool, status: String, trailers: Metadata, elapsed: Duration) {
        guard verbose else { return }
        Output.errorLine("< status: \(status)")
        for line in ConnectionOptions.describe(trailers, direction: "<") { Output.errorLine(line) }
        Output.errorLine("* elapsed: \(Self.milliseconds(elapsed))")
    }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%g s", Double(seconds) + Double(attoseconds) / 1e18)
    }

    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let value = Double(seconds) * 1000 + Double(attoseconds) / 1e15
        return String(format: "%.1f ms", value)
    }
}

/// Time since the connection was ready: what `--verbose` reports as the call's duration.
private final class CallTimer: Sendable {
    private let start = Mutex(ContinuousClock.now)

    /// Returns the time since the last start and starts again.
    func restart() -> Duration {
        let now = ContinuousClock.now
        return start.withLock { start in
            defer { start = now }
            return now - start
        }
    }

    var elapsed: Duration { ContinuousClock.now - start.withLock { $0 } }
}

/// Ctrl-C as an async stream, so a call can be cancelled cleanly instead of the process dying mid-call.
/// A second Ctrl-C while the first is being handled exits at once.
enum Interrupts {
    private static let state = InterruptState()

    static func stream() -> AsyncStream<Void> {
        state.install()
        return state.stream
    }
}

private final class InterruptState: @unchecked Sendable {
    // @unchecked: `source` is set once, on the main task, before any signal can be delivered to it;
    // the count is touched only on the source's serial queue.
    let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    private var source: (any DispatchSourceSignal)?
    private var count = 0
    private let queue = DispatchQueue(label: "yedi-probe.interrupts")

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self)
    }

    func install() {
        guard source == nil else { return }
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: queue)
        source.setEventHandler { [self] in
            count += 1
            if count > 1 { _exit(ExitStatus.interrupted) }
            continuation.yield()
        }
        source.resume()
        self.source = source
    }
}
