import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// CPU time of processes from `/proc`: a bench reports where the machine's CPU went (the services, the
/// database, the load generator), since on 2 cores they all compete.
public enum ProcessCPU {
    /// User and system time of `pid` so far (`utime` + `stime` of /proc/<pid>/stat), in seconds.
    public static func seconds(of pid: Int32) throws -> Double {
        guard let fields = statFields(pid) else { throw BenchError("unreadable /proc/\(pid)/stat") }
        return try seconds(fields, pid: pid)
    }

    /// This process's own.
    public static func ownSeconds() throws -> Double { try seconds(of: getpid()) }

    /// The PostgreSQL server's, in seconds: every running `postgres` process's own time, plus what the
    /// server process collected from its exited children (backends closed or killed with a replica, and
    /// autovacuum workers, whose time would otherwise vanish between two readings).
    public static func postgresSeconds() -> Double {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        var total = 0.0
        for entry in entries {
            guard let pid = Int32(entry), let fields = statFields(pid), fields.command == "postgres" else { continue }
            total += (try? seconds(fields, pid: pid, withReapedChildren: true)) ?? 0
        }
        return total
    }

    private static func statFields(_ pid: Int32) -> (command: Substring, rest: [Substring])? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
        else { return nil }
        return (stat[stat.index(after: open)..<close], stat[stat.index(after: close)...].split(separator: " "))
    }

    private static func seconds(
        _ fields: (command: Substring, rest: [Substring]), pid: Int32, withReapedChildren: Bool = false
    ) throws -> Double {
        // After the command name's closing parenthesis: state is field 3, utime 14, stime 15, cutime 16,
        // cstime 17 (the exited children it waited for).
        let wanted = withReapedChildren ? 11...14 : 11...12
        let ticks = wanted.compactMap { fields.rest.count > $0 ? Double(fields.rest[$0]) : nil }
        guard ticks.count == wanted.count else { throw BenchError("no CPU times in /proc/\(pid)/stat") }
        return ticks.reduce(0, +) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
