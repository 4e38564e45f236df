import Foundation
import RPCTLS

/// The process's memory at one moment, two ways: what the kernel charges us (VmRSS), and how many heap
/// blocks OpenSSL holds (the direct measure of leaked `SSL`/`SSL_CTX`/`BIO`/`X509` objects).
struct MemorySnapshot {
    var residentKiB: Int
    var openSSLLiveBlocks: Int

    static func now() -> MemorySnapshot {
        MemorySnapshot(residentKiB: Self.vmRSSKiB(), openSSLLiveBlocks: OpenSSLAllocationCounter.liveAllocations)
    }

    /// `VmRSS:  12345 kB` from /proc/self/status.
    private static func vmRSSKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
        }
        return -1
    }
}
