import Foundation

/// A replica's death under load, timed (issue 31's failover figures): the load runs for a phase, replica 0
/// gets SIGKILL, the load goes on for a phase with it dead, it is restarted on its port and data folder,
/// and the load goes on for a last phase. Where the CPU went is measured over the three phases.
public struct FailoverRun {
    /// From the start of the load to its end.
    public var window: Duration
    /// From the restart's launch to SERVING.
    public var restartToServing: Duration
    /// CPU seconds the restarted replica used once serving (it takes traffic again).
    public var restartedServingCPU: Double
    /// From SERVING until the restarted replica answered its first call other than a health check (its
    /// `/metrics`, read every 20 ms): when the clients' balancing sent it calls again; nil if it had not
    /// by the end.
    public var servingToFirstCall: Duration?
    /// CPU seconds of every replica (the killed one's until its death and its restart's), of the
    /// PostgreSQL server and of the bench.
    public var cpuServices: Double
    public var cpuPostgres: Double
    public var cpuBench: Double

    /// Runs `load` (it stops when `workers.isStopped`), kills and restarts replica 0 of `processes` with
    /// `restart(port)`, which also replaces it in the list.
    public static func measure(
        processes: ProcessList, restart: (Int) async throws -> ServiceProcess, phase: Duration,
        workers: FailoverWorkers, load: @escaping @Sendable () async -> Void
    ) async throws -> FailoverRun {
        let running = Task { await load() }
        do {
            return try await phases(processes: processes, restart: restart, phase: phase, workers: workers) {
                await running.value
            }
        } catch {
            // A failed restart or reading: the load stops with the run, not with the process.
            workers.stop()
            await running.value
            throw error
        }
    }

    private static func phases(
        processes: ProcessList, restart: (Int) async throws -> ServiceProcess, phase: Duration,
        workers: FailoverWorkers, loadEnded: () async -> Void
    ) async throws -> FailoverRun {
        let start = ContinuousClock.now
        let cpuBefore = try processes.all.map { try $0.cpuSeconds() }
        let (postgresBefore, benchBefore) = (ProcessCPU.postgresSeconds(), try ProcessCPU.ownSeconds())

        try await Task.sleep(for: phase)
        let killedCPU = try processes[0].cpuSeconds() - cpuBefore[0]
        workers.killed(at: .now)
        processes[0].kill()
        try await Task.sleep(for: phase)
        let restartStart = ContinuousClock.now
        let restarted = try await restart(processes[0].port)
        processes[0] = restarted
        let restartToServing = ContinuousClock.now - restartStart
        workers.restarted()
        let restartedAtServing = try restarted.cpuSeconds()
        let serving = ContinuousClock.now
        let phaseEnd = serving + phase
        var servingToFirstCall: Duration?
        while ContinuousClock.now < phaseEnd {
            if servingToFirstCall == nil, try await restarted.callsAnswered() > 0 {
                servingToFirstCall = ContinuousClock.now - serving
            }
            try await Task.sleep(for: servingToFirstCall == nil ? .milliseconds(20) : phaseEnd - .now)
        }
        workers.stop()
        await loadEnded()
        let window = ContinuousClock.now - start

        let restartedCPU = try restarted.cpuSeconds()
        var cpuServices = killedCPU + restartedCPU
        for (process, before) in zip(processes.all, cpuBefore).dropFirst() {
            cpuServices += try process.cpuSeconds() - before
        }
        return FailoverRun(
            window: window, restartToServing: restartToServing,
            restartedServingCPU: restartedCPU - restartedAtServing, servingToFirstCall: servingToFirstCall,
            cpuServices: cpuServices,
            cpuPostgres: ProcessCPU.postgresSeconds() - postgresBefore,
            cpuBench: try ProcessCPU.ownSeconds() - benchBefore)
    }

    /// `restart_to_serving_ms`, `serving_to_first_call_ms`, `restarted_serving_cpu_s` and `cpu_s` as JSON
    /// fields (ending in a comma).
    public var fields: String {
        #""restart_to_serving_ms":\#(Figures.milliseconds(Figures.nanoseconds(restartToServing))),"#
            + #""serving_to_first_call_ms":\#(servingToFirstCall.map { Figures.milliseconds(Figures.nanoseconds($0)) } ?? "null"),"#
            + #""restarted_serving_cpu_s":\#(Figures.format(restartedServingCPU)),"#
            + #""cpu_s":{"services":\#(Figures.format(cpuServices)),"postgres":\#(Figures.format(cpuPostgres)),"#
            + #""bench":\#(Figures.format(cpuBench)),"wall":\#(Figures.format(Figures.seconds(window)))},"#
    }

    /// Per second of the window.
    public func rate(_ count: Int) -> String { Figures.format(Double(count) / Figures.seconds(window)) }
}
