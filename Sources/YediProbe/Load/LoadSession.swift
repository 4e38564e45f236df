import LoadGenerator
import RPCCore
import RPCTLS

/// A load run against one server: the client with its connections, the runner, and Ctrl-C.
struct LoadSession {
    let address: Address
    let method: ProbeMethod
    let descriptor: MethodDescriptor
    let connection: ConnectionOptions
    let configuration: ClientConfiguration
    let options: CallOptions

    /// Checks what can be checked before connecting: a unary method with a descriptor, TLS files, metadata.
    init(address: Address, method: ProbeMethod, connection: ConnectionOptions, connections: Int) throws(ProbeError) {
        guard let descriptor = method.descriptor else {
            throw ProbeError(
                "\(method.fullName) has no generated descriptor, so its streaming kind is unknown: "
                    + "regenerate the bindings with proto/generate.sh",
                exitCode: ExitStatus.unknownName
            )
        }
        guard descriptor.kind == .unary else {
            throw .usage("load makes unary calls; \(method.fullName) is \(descriptor.kind) (try `call`)")
        }
        var configuration = try connection.clientConfiguration(address: address)
        // `connections` in all, spread over the addresses; no retries: the report counts every UNAVAILABLE.
        configuration.connectionsPerTarget = max(1, (connections + address.targets.count - 1) / address.targets.count)
        configuration.maxAttempts = 1
        let metadata: Metadata
        do {
            metadata = try connection.metadata()
        } catch {
            throw .usage("\(error)")
        }
        self.address = address
        self.method = method
        self.descriptor = descriptor
        self.connection = connection
        self.configuration = configuration
        options = CallOptions(timeout: connection.callTimeout(for: .unary), metadata: metadata)
    }

    /// Connects (a server that cannot be reached exits 3 or 4 as with `call`), runs the plan and returns
    /// the report; Ctrl-C ends the run early with the report so far.
    func run(plan: LoadPlan, requests: LoadRequests, progress: ProgressDisplay?) async throws(ProbeError) -> LoadReport
    {
        let descriptor = descriptor
        let options = options
        let connectTimeout = connection.connectTimeout
        let connections = configuration.connectionsPerTarget * configuration.targets.count
        let verbose = connection.verbose
        if verbose { narrateStart(plan) }
        let connecting = ContinuousClock.now
        let interrupts = Interrupts.stream()
        let outcome: (tally: LoadTally, elapsed: Duration, interrupted: Bool)
        do {
            outcome = try await withRPCClient(configuration: configuration) { client in
                do throws(RPCConnectionError) {
                    try await client.waitUntilReady(timeout: connectTimeout)
                } catch {
                    throw ProbeError(connecting: error)
                }
                // Every connection up before the clock starts, so the first calls do not crowd the first one.
                let deadline = ContinuousClock.now + connectTimeout
                while client.readyConnectionCount < connections, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(5))
                }
                if verbose {
                    let elapsed = Invocation.milliseconds(ContinuousClock.now - connecting)
                    Output.errorLine("* \(client.readyConnectionCount) of \(connections) connected in \(elapsed)")
                }
                let runner = LoadRunner(plan: plan)
                let call: LoadRunner.Call = { sequence in
                    guard let payload = requests.payload(sequence: sequence) else { return LoadRequests.unencodable }
                    do {
                        _ = try await client.unary(descriptor, payload: payload, options: options)
                        return LoadTally.ok
                    } catch let error as RPCError {
                        return error.code.name
                    } catch {
                        return StatusCode.unknown.name
                    }
                }
                let show = progress.map { display in { @Sendable (line: ProgressLine) in display.show(line) } }
                defer { progress?.finish() }
                return await Self.interruptible(by: interrupts) {
                    await runner.run(call: call, progress: show)
                }
            }
        } catch let error as ProbeError {
            throw error
        } catch let error as TLSError {
            throw ProbeError(settingUp: error)
        } catch {
            throw .rpc(RPCError(code: .unknown, message: "\(error)"))
        }
        return LoadReport(
            method: method.fullName, target: address.description, plan: plan, connections: connections,
            tally: outcome.tally, elapsed: outcome.elapsed, interrupted: outcome.interrupted)
    }

    /// --verbose: where the calls go and how.
    private func narrateStart(_ plan: LoadPlan) {
        let timeout = options.timeout.map { "timeout \(Invocation.seconds($0))" } ?? "no timeout"
        let ca = configuration.tls.trustRootsFile ?? "system"
        let connections = configuration.connectionsPerTarget * configuration.targets.count
        Output.errorLine("* connecting to \(address) (\(connections) connections, CA \(ca))")
        Output.errorLine("* calling \(descriptor.fullName) (\(plan.concurrency) at a time, \(timeout) each)")
        for line in ConnectionOptions.describe(options.metadata, direction: ">") { Output.errorLine(line) }
    }

    /// Runs `body`, cancelling it at the first Ctrl-C (the runner then returns what it has).
    static func interruptible<Result: Sendable>(
        by interrupts: AsyncStream<Void>,
        _ body: @escaping @Sendable () async -> Result
    ) async -> Result {
        await withTaskGroup(of: Result?.self) { group in
            group.addTask { await body() }
            group.addTask {
                for await _ in interrupts { break }
                return nil
            }
            var result: Result?
            while let next = await group.next() {
                group.cancelAll()
                if let next { result = next }
            }
            return result!
        }
    }
}
