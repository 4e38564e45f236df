import Foundation
import NIOConcurrencyHelpers
import RPCCore

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
public final class RunningProcess: @unchecked Sendable {
    // @unchecked: `process` and `input` are used only from the test's own thread; the collected
    // output is behind Mutexes because reader threads append to it.

    private let process = Process()
    private let input = Pipe()
    private let stdout = OutputCollector()
    private let stderr = OutputCollector()

    public init(_ executable: String, _ arguments: [String]) throws {
        _ = Self.ignoreSIGPIPE
        let outputPipe = Pipe()
        let errorPipe = Pipe()
        self.process.executableURL = URL(fileURLWithPath: executable)
        self.process.arguments = arguments
        self.process.standardInput = self.input
        self.process.standardOutput = outputPipe
        self.process.standardError = errorPipe
        try self.process.run()
        self.stdout.startReading(outputPipe.fileHandleForReading)
        self.stderr.startReading(errorPipe.fileHandleForReading)
    }

    deinit {
        self.kill()
    }

    /// Writing to a child that already exited must fail with EPIPE, not kill the test process.
    private static let ignoreSIGPIPE: Void = {
        signal(SIGPIPE, SIG_IGN)
    }()

    public var output: String { self.stdout.text }
    public var errorOutput: String { self.stderr.text }

    public func write(_ text: String) {
        try? self.input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
    }

    public func closeInput() {
        try? self.input.fileHandleForWriting.close()
    }

    /// Polls stdout+stderr until `predicate` holds; false if `timeout` passed or the process exited first.
    public func waitForOutput(timeout: TimeInterval, _ predicate: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if predicate(self.output + "\n" + self.errorOutput) { return true }
            if !self.process.isRunning {
                Thread.sleep(forTimeInterval: 0.05)  // let the readers catch the last bytes
                return predicate(self.output + "\n" + self.errorOutput)
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return false
    }

    /// Waits for exit up to `timeout`, then kills; returns what happened.
    public func finish(timeout: TimeInterval) -> ProcessResult {
        let deadline = Date().addingTimeInterval(timeout)
        while self.process.isRunning && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        let timedOut = self.process.isRunning
        self.kill()
        self.process.waitUntilExit()
        self.stdout.waitForEnd(timeout: 2)
        self.stderr.waitForEnd(timeout: 2)
        return ProcessResult(
            exitCode: self.process.terminationStatus,
            output: self.output,
            errorOutput: self.errorOutput,
            timedOut: timedOut
        )
    }

    /// Sends `signal` (SIGINT, SIGTERM, …) to the child, if it still runs: how tests press Ctrl-C.
    public func send(_ signal: Int32) {
        if self.process.isRunning {
            Glibc.kill(self.process.processIdentifier, signal)
        }
    }

    public func kill() {
        if self.process.isRunning {
            Glibc.kill(self.process.processIdentifier, SIGKILL)
        }
    }
}

/// Drains one pipe on a background thread into a string.
private final class OutputCollector: Sendable {
    private let data = NIOLockedValueBox(Data())
    private let ended = NIOLockedValueBox(false)

    public var text: String { self.data.withLockedValue { String(decoding: $0, as: UTF8.self) } }

    public func startReading(_ handle: FileHandle) {
        let thread = Thread { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                self.data.withLockedValue { $0.append(chunk) }
            }
            self.ended.withLockedValue { $0 = true }
        }
        thread.start()
    }

    public func waitForEnd(timeout: TimeInterval) {
        let deadline = Date().addingTimeInterval(timeout)
        while !self.ended.withLockedValue({ $0 }) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
    }
}

public enum ProcessRunner {
    /// Runs a command to completion with `stdin` closed (or fed `input`), killing it after `timeout` seconds.
    public static func run(_ executable: String, _ arguments: [String], input: String? = nil, timeout: TimeInterval)
        throws
        -> ProcessResult
    {
        let running = try RunningProcess(executable, arguments)
        if let input { running.write(input) }
        running.closeInput()
        return running.finish(timeout: timeout)
    }

    /// The `openssl` CLI this machine has.
    public static let openssl = "/usr/bin/openssl"
}
