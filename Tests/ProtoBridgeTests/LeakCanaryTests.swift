import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// Proves the LeakSanitizer suppressions (Tests/lsan-suppressions.txt) hide only XCTest's objects:
/// with `YEDI_PLANT_LEAK=1`, this test leaks 10 bytes, and a run under `--sanitize=address` must fail
/// with a leak report. scripts/test.sh runs it that way and checks that it does.
final class LeakCanaryTests: XCTestCase {
    nonisolated(unsafe) static var planted: UnsafeMutableRawPointer?

    func testPlantedLeakWhenAsked() throws {
        guard ProcessInfo.processInfo.environment["YEDI_PLANT_LEAK"] == "1" else {
            throw XCTSkip("set YEDI_PLANT_LEAK=1 to plant a 10-byte leak")
        }
        let pointer = malloc(10)!
        memset(pointer, 0x5A, 10)
        XCTAssertEqual(pointer.load(as: UInt8.self), 0x5A)
        // Drop the only reference so LeakSanitizer sees the block as unreachable.
        Self.planted = pointer
        Self.planted = nil
    }
}
