import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What a finished child process did.
public struct ProcessResult: Sendable {
    public var exitCode: Int32
    public var output: String
    public var errorOutput: String
    public var timedOut: Bool

    /// stdout and stderr together, for assertions that don't care which stream a tool used.
    public var combinedOutput: String { self.output + "\n" + self.errorOutput }

    public func requireSuccess() throws {
        guard self.exitCode == 0, !self.timedOut else {
            throw ProcessFailure(
                description: "exit \(self.exitCode), timedOut \(self.timedOut):\n\(self.combinedOutput)")
        }
    }
}

public struct ProcessFailure: Error, CustomStringConvertible {
    public var description: String
}

/// A child process (the `openssl` CLI, scripts) that tests can feed and watch, and that can never hang
/// the suite: every wait has a deadline, after which the child is killed.
///
/// Spawned with `posix_spawn` rather than Foundation's `Process`, whose `run()` leaks a weak-reference
/// side table that LeakSanitizer (rightly) reports in the ASan run.
public final class RunningProcess: @unchecked Sendable {
    // @unchecked: `pid`, `exitStatus` and `input` are used only from the test's own thread; the
    // collected output is behind locks because reader threads append to it.

    private let pid: pid_t
    private var exitStatus: Int32?
    private var input: Int32
    private let stdout = OutputCollector()
    private let stderr = OutputCollector()

    /// The CPU time (user + system) the child has used so far, from `/proc/<pid>/stat`; nil when it
    /// cannot be read (the child was reaped, or not Linux).
    public var cpuTime: Duration? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let nameEnd = stat.lastIndex(of: ")")
        else { return nil }
        // After the parenthesised name: field 3 (state) is index 0, so utime (14) and stime (15) are 11 and 12.
        let fields = stat[stat.index(after: nameEnd)...].split(separator: " ")
        guard fields.count > 12, let user = Int64(fields[11]), let system = Int64(fields[12]) else { return nil }
        let ticksPerSecond = Int64(sysconf(Int32(_SC_CLK_TCK)))
        return .milliseconds((user + system) * 1_000 / ticksPerSecond)
    }

    /// - Parameters:
    ///   - environment: variables to set or replace (nil values remove one) on top of this process's.
    ///   - workingDirectory: the child's working directory (default: this process's).
    public init(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String?] = [:],
        workingDirectory: String? = nil
    ) throws {
        _ = Self.ignoreSIGPIPE
        let stdinPipe = try Self.makePipe()
        let stdoutPipe = try Self.makePipe()
        let stderrPipe = try Self.makePipe()

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the child's 0/1/2; every pipe end is close-on-exec otherwise.
        posix_spawn_file_actions_adddup2(&actions, stdinPipe.read, 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe.write, 1)
        posix_spawn_file_actions_adddup2(&actions, stderrPipe.write, 2)

        // posix_spawn_file_actions_addchdir_np is not visible to Swift: `env -C` changes directory instead.
        let command =
            workingDirectory.map { ["/usr/bin/env", "-C", $0, executable] + arguments } ?? [executable] + arguments
        let argv = command.map { strdup($0) } + [nil]
        defer {
            for argument in argv { free(argument) }
        }
        var variables = ProcessInfo.processInfo.environment
        for (name, value) in environment { variables[name] = value }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for variable in envp { free(variable) }
        }
        var pid = pid_t()
        let rc = posix_spawn(&pid, command[0], &actions, nil, argv, envp)
        close(stdinPipe.read)
        close(stdoutPipe.write)
        close(stderrPipe.write)
        guard rc == 0 else {
            for descriptor in [stdinPipe.write, stdoutPipe.read, stderrPipe.read] { _ = close(descriptor) }
            throw ProcessFailure(description: "posix_spawn \(executable): \(String(cString: strerror(rc)))")
        }
        self.pid = pid
        self.input = stdinPipe.write
        self.stdout.startReading(stdoutPipe.read)
        self.stderr.startReading(stderrPipe.read)
    }

    deinit {
        self.closeInput()
        if self.exitStatus == nil {
            Glibc.kill(self.pid, SIGKILL)
            _ = self.reap(blocking: true)
        }
    }

    /// Writing to a child that already exited must fail with EPIPE, not kill the test process.
    private static let ignoreSIGPIPE: Void = {
        signal(SIGPIPE, SIG_IGN)
    }()

    private static func makePipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw ProcessFailure(description: "pipe: \(String(cString: strerror(errno)))")
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)  // only the dup2'd copies reach the child
        }
        return (fds[0], fds[1])
    }

    public var output: String { self.stdout.text }
    public var errorOutput: String { self.stderr.text }

    public func write(_ text: String) {
        guard self.input >= 0 else { return }
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(self.input, $0.baseAddress, $0.count) }
            guard written > 0 else { return }  // EPIPE: the child is gone
            bytes = bytes.dropFirst(written)
        }
    }

    public func closeInput() {
        if self.input >= 0 {
            close(self.input)
            self.input = -1
        }
    }

    /// True once the child has exited (and was reaped).
    public var hasExited: Bool {
        self.exitStatus != nil || self.reap(blocking: false)
    }

    /// waitpid; records the status. Returns whether the child has exited.
    @discardableResult
    private func reap(blocking: Bool) -> Bool {
        guard self.exitStatus == nil else { return true }
        var status: Int32 = 0
        let result = waitpid(self.pid, &status, blocking ? 0 : WNOHANG)
        guard result == self.pid else { return false }
        self.exitStatus = status
        return true
    }

    /// Polls stdout+stderr until `predicate` holds; false if `timeout` passed or the process exited first.
    public func waitForOutput(timeout: TimeInterval, _ predicate: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if predicate(self.output + "\n" + self.errorOutput) { return true }
            if self.hasExited {
                self.stdout.waitForEnd(timeout: 2)
                self.stderr.waitForEnd(timeout: 2)
                return predicate(self.output + "\n" + self.errorOutput)
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return false
    }

    /// Waits for exit up to `timeout`, then kills; returns what happened.
    public func finish(timeout: TimeInterval) -> ProcessResult {
        let deadline = Date().addingTimeInterval(timeout)
        while !self.hasExited && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        let timedOut = !self.hasExited
        self.kill()
        self.reap(blocking: true)
        self.closeInput()
        self.stdout.waitForEnd(timeout: 2)
        self.stderr.waitForEnd(timeout: 2)
        let status = self.exitStatus ?? 0
        // WIFEXITED / WEXITSTATUS / WTERMSIG are macros: decode by hand (signals as 128 + n, like a shell).
        let exitCode = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return ProcessResult(
            exitCode: exitCode,
            output: self.output,
            errorOutput: self.errorOutput,
            timedOut: timedOut
        )
    }

    /// Sends `signal` (SIGINT, say) to the child if it is still running.
    public func send(_ signal: Int32) {
        if !self.hasExited {
            Glibc.kill(self.pid, signal)
        }
    }

    public func kill() {
        if !self.hasExited {
            Glibc.kill(self.pid, SIGKILL)
        }
    }
}

/// Drains one pipe on a background thread into a string.
private final class OutputCollector: Sendable {
    private let data = LockedValue([UInt8]())
    private let ended = LockedValue(false)

    var text: String { self.data.withLock { String(decoding: $0, as: UTF8.self) } }

    /// Reads `descriptor` until EOF, then closes it.
    func startReading(_ descriptor: Int32) {
        let thread = Thread { [self] in
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                self.data.withLock { $0.append(contentsOf: chunk[0..<count]) }
            }
            close(descriptor)
            self.ended.withLock { $0 = true }
        }
        thread.start()
    }

    func waitForEnd(timeout: TimeInterval) {
        let deadline = Date().addingTimeInterval(timeout)
        while !self.ended.withLock({ $0 }) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
    }
}

public enum ProcessRunner {
    /// Runs a command to completion with `stdin` closed (or fed `input`), killing it after `timeout` seconds.
    public static func run(
        _ executable: String,
        _ arguments: [String],
        input: String? = nil,
        timeout: TimeInterval,
        environment: [String: String?] = [:],
        workingDirectory: String? = nil
    ) throws -> ProcessResult {
        let running = try RunningProcess(
            executable, arguments, environment: environment, workingDirectory: workingDirectory)
        if let input { running.write(input) }
        running.closeInput()
        return running.finish(timeout: timeout)
    }

    /// The `openssl` CLI this machine has.
    public static let openssl = "/usr/bin/openssl"
}
