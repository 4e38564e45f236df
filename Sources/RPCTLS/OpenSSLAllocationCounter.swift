internal import COpenSSL
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Counts OpenSSL's live heap blocks (every `SSL`, `SSL_CTX`, `BIO`, `X509`… is made of them), for
/// leak soaks: if the count returns to its baseline after each connection, no OpenSSL object leaked.
///
/// Diagnostics only. It must be installed before OpenSSL allocates anything (first thing in `main`),
/// and then costs one atomic add per OpenSSL allocation; uninstalled, it costs nothing.
public enum OpenSSLAllocationCounter {
    fileprivate static let live = Atomic<Int>(0)

    /// Routes OpenSSL's allocator through the counter. Returns false if OpenSSL already allocated
    /// (then nothing is counted).
    public static func install() -> Bool {
        CRYPTO_set_mem_functions(countingMalloc, countingRealloc, countingFree) == 1
    }

    /// Blocks OpenSSL allocated and has not freed since ``install()``.
    public static var liveAllocations: Int {
        self.live.load(ordering: .relaxed)
    }
}

private func countingMalloc(_ size: Int, _ file: UnsafePointer<CChar>?, _ line: CInt) -> UnsafeMutableRawPointer? {
    let pointer = malloc(size)
    if pointer != nil {
        OpenSSLAllocationCounter.live.add(1, ordering: .relaxed)
    }
    return pointer
}

private func countingRealloc(
    _ pointer: UnsafeMutableRawPointer?,
    _ size: Int,
    _ file: UnsafePointer<CChar>?,
    _ line: CInt
) -> UnsafeMutableRawPointer? {
    guard let pointer else {
        return countingMalloc(size, file, line)
    }
    guard size > 0 else {
        countingFree(pointer, file, line)
        return nil
    }
    return realloc(pointer, size)
}

private func countingFree(_ pointer: UnsafeMutableRawPointer?, _ file: UnsafePointer<CChar>?, _ line: CInt) {
    guard let pointer else { return }
    OpenSSLAllocationCounter.live.subtract(1, ordering: .relaxed)
    free(pointer)
}
