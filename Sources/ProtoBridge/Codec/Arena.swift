import CProtobufC

/// Owns every C allocation of one encode or one decode, and releases them all at once.
///
/// Guards two of protobuf-c's sharp edges by construction: memory is always released by the allocator
/// that allocated it, and defaults that protobuf-c points at static data (`protobuf_c_empty_string`)
/// are never freed, because nothing is freed one by one. Arenas are reused per thread (`ArenaPool`),
/// so a small message costs no malloc at all.
@usableFromInline
final class Arena {
    private static let alignment = 8
    /// A reused arena keeps at most this much; bigger blocks (1 MiB images) go back to the system.
    static let retainedCapacity = 64 << 10

    // An arena is used by one thread at a time (it is taken from and returned to a per-thread pool),
    // so the runtime's dynamic exclusivity checks only cost time here.
    @exclusivity(unchecked) private var current: UnsafeMutableRawPointer
    @exclusivity(unchecked) private var used = 0
    @exclusivity(unchecked) private var capacity: Int
    /// Blocks filled before `current`, or given to single large allocations.
    @exclusivity(unchecked) private var retired: [UnsafeMutableRawPointer] = []

    init(capacity: Int = 4096) {
        self.capacity = max(capacity, 64)
        current = .allocate(byteCount: self.capacity, alignment: Self.alignment)
    }

    deinit {
        current.deallocate()
        for block in retired { block.deallocate() }
    }

    /// Uninitialised memory, 8-byte aligned, valid until the arena is reset or goes away.
    func allocate(byteCount: Int) -> UnsafeMutableRawPointer {
        let size = (max(byteCount, 1) + Self.alignment - 1) & ~(Self.alignment - 1)
        if used + size <= capacity {
            defer { used += size }
            return current + used
        }
        if size > capacity / 2 {
            // Big values get their own block; the current one keeps serving small ones.
            let block = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: Self.alignment)
            retired.append(block)
            return block
        }
        retired.append(current)
        capacity *= 2
        current = .allocate(byteCount: capacity, alignment: Self.alignment)
        used = size
        return current
    }

    /// Zeroed storage for `count` values of `T`.
    func allocateArray<T>(of _: T.Type, count: Int) -> UnsafeMutablePointer<T> {
        let raw = allocate(byteCount: MemoryLayout<T>.stride * count)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<T>.stride * count)
        return raw.assumingMemoryBound(to: T.self)
    }

    /// Forgets everything allocated, keeping one block of bounded size for the next use.
    func reset() {
        guard !retired.isEmpty || capacity > Self.retainedCapacity else {
            used = 0
            return
        }
        for block in retired { block.deallocate() }
        retired.removeAll(keepingCapacity: true)
        if capacity > Self.retainedCapacity {
            current.deallocate()
            capacity = 4096
            current = .allocate(byteCount: capacity, alignment: Self.alignment)
        }
        used = 0
    }

    /// A protobuf-c allocator drawing from this arena, for `protobuf_c_message_unpack`.
    ///
    /// Valid while the arena is alive; `free` does nothing because the arena releases everything.
    func withAllocator<R>(_ body: (UnsafeMutablePointer<ProtobufCAllocator>) throws -> R) rethrows -> R {
        var allocator = ProtobufCAllocator(
            alloc: { data, size in
                // Borrowed: `withExtendedLifetime` below keeps the arena alive, so no reference is counted
                // per allocation.
                Unmanaged<Arena>.fromOpaque(data!)._withUnsafeGuaranteedRef { $0.allocate(byteCount: size) }
            },
            free: { _, _ in },
            allocator_data: Unmanaged.passUnretained(self).toOpaque()
        )
        return try withExtendedLifetime(self) { try body(&allocator) }
    }
}
