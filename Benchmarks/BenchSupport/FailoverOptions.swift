import ArgumentParser

/// `--failover` and `--failover-phase-seconds`: the benches that can measure a replica's death
/// (`FailoverRun`) take them alike.
public struct FailoverOptions: ParsableArguments {
    @Flag(help: "SIGKILL replica 0 mid-run and restart it: failover figures (needs --postgres, --replicas 2+).")
    public var failover = false

    @Option(help: "With --failover: seconds of load before the kill, while it is down, and after its restart.")
    public var failoverPhaseSeconds = 4

    public init() {}

    /// Refuses `--failover` without PostgreSQL and 2 replicas or more.
    public func check(postgres: Bool, replicas: Int) throws {
        guard !failover || (postgres && replicas >= 2) else {
            throw BenchError("--failover needs --postgres and --replicas 2 or more")
        }
        guard failoverPhaseSeconds >= 1 else { throw BenchError("--failover-phase-seconds must be 1 or more") }
    }

    /// One phase of the run.
    public var phase: Duration { .seconds(failoverPhaseSeconds) }
}
