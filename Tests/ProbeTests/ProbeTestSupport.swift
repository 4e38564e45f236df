import Foundation
import RPCTestSupport
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// The built `yedi-probe`: next to the test bundle, since `swift build --build-tests` builds every product
/// into the same directory.
enum ProbeExecutable {
    static let path: String? = {
        let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [
            bundleDirectory,
            Bundle.main.bundleURL,
            Bundle.main.bundleURL.deletingLastPathComponent(),
        ].map { $0.appendingPathComponent("yedi-probe").path }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    static func require() throws -> String {
        guard let path else {
            throw XCTSkip("yedi-probe is not built next to the tests: run `swift build --build-tests` first")
        }
        return path
    }
}

extension XCTestCase {
    /// Runs the probe to completion (killed after `timeout` seconds), stdin closed or fed `input`.
    func probe(_ arguments: [String], input: String? = nil, timeout: TimeInterval = 60) throws -> ProcessResult {
        let result = try ProcessRunner.run(try ProbeExecutable.require(), arguments, input: input, timeout: timeout)
        XCTAssertFalse(result.timedOut, "yedi-probe \(arguments) did not finish in \(timeout) s")
        return result
    }

    /// Asserts the exit status, showing everything the probe printed when it differs.
    func assertExit(
        _ result: ProcessResult,
        _ expected: Int32,
        file: StaticString = #filePath,
        line: UInt = #line
    ) {
        XCTAssertEqual(
            result.exitCode,
            expected,
            "stdout:\n\(result.output)\nstderr:\n\(result.errorOutput)",
            file: file,
            line: line
        )
    }

    /// Asserts that the probe failed the documented way: one `yedi-probe: …` line on stderr (never a
    /// stack trace or a crash report), containing `fragments`, and nothing on stdout.
    func assertFailure(
        _ result: ProcessResult,
        exit expected: Int32,
        contains fragments: [String],
        file: StaticString = #filePath,
        line: UInt = #line
    ) {
        assertExit(result, expected, file: file, line: line)
        let lines = result.errorOutput.split(separator: "\n", omittingEmptySubsequences: true)
        XCTAssertEqual(lines.count, 1, "expected one line on stderr:\n\(result.errorOutput)", file: file, line: line)
        for fragment in fragments {
            XCTAssertTrue(
                result.errorOutput.contains(fragment),
                "stderr lacks \"\(fragment)\":\n\(result.errorOutput)",
                file: file,
                line: line
            )
        }
        XCTAssertEqual(result.output, "", "nothing belongs on stdout", file: file, line: line)
    }
}

/// A loopback port nothing listens on: bound, read back, and closed again.
func closedLoopbackPort() throws -> Int {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw LoopbackPortError(step: "socket") }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
            bind(descriptor, generic, length) == 0 && getsockname(descriptor, generic, &length) == 0
        }
    }
    guard bound else { throw LoopbackPortError(step: "bind") }
    return Int(UInt16(bigEndian: address.sin_port))
}

struct LoopbackPortError: Error {
    var step: String
}
