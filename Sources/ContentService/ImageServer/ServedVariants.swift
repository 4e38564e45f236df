import CountLimitedCache
import NIOCore
import NIOPosix

/// The variant blobs (`<data>/image-variants/<sha256>`) as the image port reads them: through a
/// count-limited LRU (`--image-cache-items`, `yedi_cache_*{cache="content-image-variants"}`) of the bytes
/// ready to send, with whether a post or review shows them (public).
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

    init(blobs: any ImageBlobStore, store: any ContentStore, cache: LRUCache<String, Variant>) {
        self.blobs = blobs
        self.store = store
        self.cache = cache
    }

    /// From memory only: what the event loop answers without a thread hop.
    func cached(_ sha256: String) -> Variant? {
        cache.get(sha256)
    }

    /// The variant named `sha256`, or nil when there is none, or when `mustBePublic` and no post or
    /// review shows it (the same answer, so an unsigned URL does not tell a private image exists).
    func load(_ sha256: String, mustBePublic: Bool) async throws -> Variant? {
        let cached = cache.get(sha256)
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
        let blobs = self.blobs
        guard let bytes = try await NIOThreadPool.singleton.runIfActive({ try blobs.read(sha256: sha256) }) else {
            return nil
        }
        let variant = Variant(bytes: ByteBuffer(bytes: bytes), isPublic: isPublic)
        cache.put(variant, forKey: sha256)
        return variant
    }

    /// Forgets deleted blobs.
    func evict(_ sha256: String) {
        cache.remove(sha256)
    }
}
