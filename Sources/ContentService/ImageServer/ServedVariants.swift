import CountLimitedCache
import NIOCore

/// The variant blobs (`<data>/image-variants/<sha256>`, or rows on PostgreSQL) as the image port reads
/// them: through a count-limited LRU (`--image-cache-items`, `yedi_cache_*{cache="content-image-variants"}`)
/// of the bytes ready to send, with whether a post or review shows them (public).
final class ServedVariants: Sendable {
    struct Variant: Sendable {
        var bytes: ByteBuffer
        /// Known public (a post or review shows it). False may be stale: an upload becomes public when a
        /// post takes it, so an unsigned request asks the database again before refusing.
        var isPublic: Bool
    }

    let blobs: any ImageBlobStore
    private let store: any ContentStore
    private let cache: LRUCache<String, Variant>
    /// Whether a hit asks the blob store first: on PostgreSQL another replica may have deleted the blob,
    /// and only its own cache forgot it. The hit then saves the bytes' transfer, not the query.
    let revalidatesHits: Bool

    init(
        blobs: any ImageBlobStore, store: any ContentStore, cache: LRUCache<String, Variant>,
        revalidatesHits: Bool = false
    ) {
        self.blobs = blobs
        self.store = store
        self.cache = cache
        self.revalidatesHits = revalidatesHits
    }

    /// From memory only: what the event loop answers without a thread hop (never when hits are
    /// revalidated).
    func cached(_ sha256: String) -> Variant? {
        revalidatesHits ? nil : cache.get(sha256)
    }

    /// The variant named `sha256`, or nil when there is none, or when `mustBePublic` and no post or
    /// review shows it (the same answer, so an unsigned URL does not tell a private image exists).
    func load(_ sha256: String, mustBePublic: Bool) async throws -> Variant? {
        var cached = cache.get(sha256)
        if cached != nil, revalidatesHits, try await !blobs.exists(sha256: sha256) {
            cache.remove(sha256)
            cached = nil
        }
        var isPublic = cached?.isPublic ?? false
        if mustBePublic, !isPublic {
            isPublic = try await store.isPublicVariant(sha256)
            guard isPublic else { return nil }
        }
        if var cached {
            cached.isPublic = isPublic
            cache.put(cached, forKey: sha256)
            return cached
        }
        guard let bytes = try await blobs.read(sha256: sha256) else { return nil }
        let variant = Variant(bytes: ByteBuffer(bytes: bytes), isPublic: isPublic)
        cache.put(variant, forKey: sha256)
        return variant
    }

    /// Forgets deleted blobs.
    func evict(_ sha256: String) {
        cache.remove(sha256)
    }
}
