#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Arenas kept per thread, so encoding and decoding reuse memory instead of calling malloc.
///
/// Per thread, not shared: taking and returning an arena needs no lock. An encode that nests a decode
/// (or the reverse) takes a second arena; a thread keeps at most `maxPerThread`.
enum ArenaPool {
    static let maxPerThread = 8

    private final class ThreadArenas {
        // Touched only by its own thread.
        @exclusivity(unchecked) var free: [Arena] = []
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { storage in
            if let storage { Unmanaged<AnyObject>.fromOpaque(storage).release() }
        }
        precondition(status == 0, "pthread_key_create failed: \(status)")
        return key
    }()

    /// Runs `body` with this thread's arenas, borrowed: the thread's key holds them, so no reference is
    /// counted per call (a retain and a release each time, twice per decoded message otherwise).
    private static func withLocal<Result>(_ body: (ThreadArenas) -> Result) -> Result {
        if let storage = pthread_getspecific(key) {
            return Unmanaged<ThreadArenas>.fromOpaque(storage)._withUnsafeGuaranteedRef(body)
        }
        let arenas = ThreadArenas()
        pthread_setspecific(key, Unmanaged.passRetained(arenas).toOpaque())
        return body(arenas)
    }

    static func acquire() -> Arena {
        withLocal { $0.free.popLast() } ?? Arena()
    }

    static func release(_ arena: Arena) {
        arena.reset()
        withLocal { arenas in
            if arenas.free.count < maxPerThread { arenas.free.append(arena) }
        }
    }
}
