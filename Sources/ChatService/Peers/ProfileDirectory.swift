import Foundation
import RPCCore
import ServiceRuntime

/// Names and images of room members from AccountService, batched (one call per 100 missing ids) and
/// cached briefly (`lifetime`) in a count-limited LRU cache: a renamed user shows the new name within
/// that time. If AccountService cannot answer, the names are left empty (the room list still works).
final class ProfileDirectory: Sendable {
    private struct Entry: Sendable {
        var profile: ChatPeers.Profile?
        var fetchedAt: Int64
    }

    private let cache: LRUCache<String, Entry>
    private let fetch: @Sendable ([String]) async throws -> [ChatPeers.Profile]
    private let clock: any WallClock
    let lifetimeMilliseconds: Int64

    init(
        fetch: @escaping @Sendable ([String]) async throws -> [ChatPeers.Profile], clock: any WallClock,
        capacity: Int = 10_000, lifetimeMilliseconds: Int64 = 60_000
    ) {
        self.cache = LRUCache(name: "chat_profiles", capacity: capacity)
        self.fetch = fetch
        self.clock = clock
        self.lifetimeMilliseconds = lifetimeMilliseconds
    }

    /// Profiles of `ids` that are known (missing ones: unknown users, or AccountService unreachable).
    func profiles(_ ids: [String]) async -> [String: ChatPeers.Profile] {
        let now = clock.nowMilliseconds
        var found: [String: ChatPeers.Profile] = [:]
        var missing: [String] = []
        for id in Set(ids) {
            if let entry = cache.get(id), now - entry.fetchedAt < lifetimeMilliseconds {
                if let profile = entry.profile { found[id] = profile }
            } else {
                missing.append(id)
            }
        }
        var start = 0
        while start < missing.count {
            let batch = Array(missing[start..<min(start + 100, missing.count)])
            start += 100
            guard let answer = try? await fetch(batch) else { continue }
            var byID: [String: ChatPeers.Profile] = [:]
            for profile in answer { byID[profile.userID] = profile }
            for id in batch {
                // Unknown ids are cached too (as nil), so a deleted account is not asked for on every list.
                cache.put(Entry(profile: byID[id], fetchedAt: now), forKey: id)
                if let profile = byID[id] { found[id] = profile }
            }
        }
        return found
    }
}
