import CountLimitedCache
import Logging
import ServiceRuntime

/// Fresh URLs for chat photos. ContentService serves a chat photo by a signed URL that expires (a day,
/// rounded up to the hour: docs/platform.md, "Images"); a message keeps the URL it was sent with, so
/// history read later would show dead images. A history page is given the photos' current URLs instead:
/// one `GetImageRefs` for the photos not refreshed within `maxAgeMilliseconds` (an hour, well inside a
/// URL's day), kept in a count-limited LRU cache.
///
/// When ContentService cannot answer, the last URLs it gave (or the stored ones) are served — they may
/// still work — and a warning is logged: the page is this service's own data. Post shares keep theirs: a post's photos are public, by
/// URLs that do not expire.
final class PhotoURLRefresher: Sendable {
    private struct Entry: Sendable {
        var image: ImageRecord
        var refreshedAtMilliseconds: Int64
    }

    static let maxAgeMilliseconds: Int64 = 3_600_000

    private let cache: LRUCache<String, Entry>
    private let clock: any WallClock
    private let lookup: @Sendable ([String]) async throws -> [ChatPeers.OwnedImage]

    init(
        capacity: Int, clock: any WallClock,
        lookup: @escaping @Sendable ([String]) async throws -> [ChatPeers.OwnedImage]
    ) {
        self.cache = LRUCache(name: "chat-photo-urls", capacity: capacity)
        self.clock = clock
        self.lookup = lookup
    }

    /// `messages` with their photos' URLs as ContentService signs them now (or as stored, see above).
    func refresh(_ messages: [MessageRecord], logger: Logger) async -> [MessageRecord] {
        let now = clock.nowMilliseconds
        let photos = Set(messages.compactMap(\.photoID))
        guard !photos.isEmpty else { return messages }
        var current: [String: ImageRecord] = [:]
        var stale: [String] = []
        var lastKnown: [String: ImageRecord] = [:]
        for id in photos {
            let entry = cache.get(id)
            if let entry, now - entry.refreshedAtMilliseconds < Self.maxAgeMilliseconds {
                current[id] = entry.image
            } else {
                stale.append(id)
                lastKnown[id] = entry?.image
            }
        }
        if !stale.isEmpty {
            do {
                for start in stride(from: 0, to: stale.count, by: 100) {
                    for owned in try await lookup(Array(stale[start..<min(start + 100, stale.count)])) {
                        current[owned.image.id] = owned.image
                        cache.put(Entry(image: owned.image, refreshedAtMilliseconds: now), forKey: owned.image.id)
                    }
                }
            } catch {
                logger.warning("chat photo URLs not refreshed; serving the last known", metadata: ["error": "\(error)"])
                current.merge(lastKnown) { fresh, _ in fresh }
            }
        }
        return messages.map { message in
            guard let id = message.photoID, let image = current[id] else { return message }
            var refreshed = message
            refreshed.body = .image(image)
            return refreshed
        }
    }
}

extension MessageRecord {
    /// The image id of a photo message.
    fileprivate var photoID: String? {
        if case .image(let image) = body { return image.id }
        return nil
    }
}
