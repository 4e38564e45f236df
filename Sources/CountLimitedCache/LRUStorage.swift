/// The single-threaded heart of ``LRUCache``: a hash map from key to slot, and a recency list threaded through
/// an array of slots by index. Links are array indices rather than node objects, so no operation allocates once
/// the array has grown to capacity, and freed slots are recycled through a free list.
///
/// Not thread-safe on its own; ``LRUCache`` keeps it behind a mutex. Its hot methods are `@inlinable`, so
/// that a cache's lookups are specialized for its key and value types in the module using it: unspecialized,
/// each lookup asked the runtime for the generic types' metadata (`LRUCache.get` took 5.4% of an
/// authenticated echo call's server CPU; 2.0% specialized).
@usableFromInline
struct LRUStorage<Key: Hashable, Value> {
    /// What a ``setValue(_:forKey:)`` pushed out, handed back so the caller can release it outside its lock.
    @usableFromInline
    enum Displaced {
        case nothing
        /// The key was present; this is its previous value.
        case replaced(Value)
        /// The cache was full; this least recently used entry made room.
        case evicted(key: Key, value: Value)
    }

    /// An array element: a live entry, or a free slot waiting in `freeSlots`.
    @usableFromInline
    struct Slot {
        /// `nil` while the slot is free, so that a freed key and value are released at once.
        @usableFromInline var entry: (key: Key, value: Value)?
        /// Toward the most recently used end; `noSlot` at the newest entry.
        @usableFromInline var newer: Int
        /// Toward the least recently used end; `noSlot` at the oldest entry.
        @usableFromInline var older: Int

        @inlinable
        init(entry: (key: Key, value: Value)?, newer: Int, older: Int) {
            self.entry = entry
            self.newer = newer
            self.older = older
        }
    }

    @inlinable static var noSlot: Int { -1 }

    @usableFromInline let capacity: Int
    @usableFromInline var slotByKey: [Key: Int] = [:]
    @usableFromInline var slots: [Slot] = []
    @usableFromInline var freeSlots: [Int] = []
    @usableFromInline var newest = -1
    @usableFromInline var oldest = -1

    @usableFromInline
    init(capacity: Int) {
        precondition(capacity >= 1, "LRUStorage capacity must be at least 1, got \(capacity)")
        self.capacity = capacity
    }

    @inlinable var count: Int { slotByKey.count }

    /// The value for `key`, which becomes the most recently used entry.
    @inlinable
    mutating func value(forKey key: Key) -> Value? {
        guard let slot = slotByKey[key] else { return nil }
        moveToNewest(slot)
        return slots[slot].entry!.value
    }

    /// Stores `value` as the most recently used entry, evicting the least recently used one when full.
    @inlinable
    mutating func setValue(_ value: Value, forKey key: Key) -> Displaced {
        if let slot = slotByKey[key] {
            let previous = slots[slot].entry!.value
            slots[slot].entry = (key, value)
            moveToNewest(slot)
            return .replaced(previous)
        }
        if slotByKey.count == capacity {
            let slot = oldest
            let evicted = slots[slot].entry!
            slotByKey[evicted.key] = nil
            slots[slot].entry = (key, value)
            slotByKey[key] = slot
            moveToNewest(slot)
            return .evicted(key: evicted.key, value: evicted.value)
        }
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot].entry = (key, value)
        } else {
            slot = slots.count
            slots.append(Slot(entry: (key, value), newer: Self.noSlot, older: Self.noSlot))
        }
        slotByKey[key] = slot
        linkAsNewest(slot)
        return .nothing
    }

    /// Removes `key`'s entry and returns its value.
    @inlinable
    mutating func removeValue(forKey key: Key) -> Value? {
        guard let slot = slotByKey.removeValue(forKey: key) else { return nil }
        unlink(slot)
        let value = slots[slot].entry!.value
        slots[slot].entry = nil
        freeSlots.append(slot)
        return value
    }

    // MARK: The recency list

    @inlinable
    mutating func moveToNewest(_ slot: Int) {
        guard slot != newest else { return }
        unlink(slot)
        linkAsNewest(slot)
    }

    @inlinable
    mutating func linkAsNewest(_ slot: Int) {
        slots[slot].newer = Self.noSlot
        slots[slot].older = newest
        if newest != Self.noSlot {
            slots[newest].newer = slot
        } else {
            oldest = slot
        }
        newest = slot
    }

    @inlinable
    mutating func unlink(_ slot: Int) {
        let newer = slots[slot].newer
        let older = slots[slot].older
        if newer != Self.noSlot {
            slots[newer].older = older
        } else {
            newest = older
        }
        if older != Self.noSlot {
            slots[older].newer = newer
        } else {
            oldest = newer
        }
        slots[slot].newer = Self.noSlot
        slots[slot].older = Self.noSlot
    }
}

// MARK: Checks for tests

extension LRUStorage {
    /// The keys from the most to the least recently used.
    var keysFromNewest: [Key] {
        var keys: [Key] = []
        keys.reserveCapacity(count)
        var slot = newest
        while slot != Self.noSlot, keys.count <= slots.count {
            keys.append(slots[slot].entry!.key)
            slot = slots[slot].older
        }
        return keys
    }

    /// A description of the first broken invariant, or `nil` when the map, the list and the free list agree.
    func invariantViolation() -> String? {
        if count > capacity { return "count \(count) exceeds capacity \(capacity)" }
        if slots.count > capacity { return "\(slots.count) slots for capacity \(capacity)" }
        if count + freeSlots.count != slots.count {
            return "\(count) entries + \(freeSlots.count) free slots != \(slots.count) slots"
        }
        var visited = 0
        var slot = newest
        var previous = Self.noSlot
        while slot != Self.noSlot {
            visited += 1
            if visited > count { return "the recency list is longer than the map (a cycle?)" }
            guard let entry = slots[slot].entry else { return "free slot \(slot) is linked" }
            if slotByKey[entry.key] != slot { return "the map does not point \(entry.key) at slot \(slot)" }
            if slots[slot].newer != previous { return "slot \(slot) has a wrong back link" }
            previous = slot
            slot = slots[slot].older
        }
        if previous != oldest { return "the list does not end at the oldest slot" }
        if visited != count { return "the recency list holds \(visited) entries, the map \(count)" }
        for free in freeSlots where slots[free].entry != nil { return "free slot \(free) holds an entry" }
        return nil
    }
}
