import CountLimitedCache
import NIOPosix
import RPCAccess
import RPCCore
import ServiceRuntime
import YediCrypto

/// Uploads and reads of images: the format check, the variants (`ImageVariantMaker`), the content-addressed
/// blobs (`ImageBlobStore`: originals in `<data>/images/` and variants in `<data>/image-variants/` beside
/// SQLite, rows on PostgreSQL), the row, and the read cache.
///
/// Reads go through an `LRUCache` limited by item count (`--image-cache-items`, 50 by default, as the app
/// chose: photos vary too much in size for a byte budget). A hit answers without the blob store, and on
/// SQLite without the database (on PostgreSQL it confirms the row first: `revalidatesHits`); its hits,
/// misses and evictions are on `/metrics` (`yedi_cache_*_total{cache="content-images"}`).
final class ImageLibrary: Sendable {
    static let maximumBytes = 10 << 20

    struct Image: Sendable {
        var record: ImageRecord
        var bytes: [UInt8]
    }

    let store: any ContentStore
    let blobs: any ImageBlobStore
    let cache: LRUCache<String, Image>
    /// The variants' blobs and the image port's cache of them.
    let variants: ServedVariants
    /// Whether a cache hit asks the database first (replicas sharing one database).
    let revalidatesHits: Bool

    init(
        store: any ContentStore, blobs: any ImageBlobStore, cache: LRUCache<String, Image>, variants: ServedVariants,
        revalidatesHits: Bool = false
    ) {
        self.store = store
        self.blobs = blobs
        self.cache = cache
        self.variants = variants
        self.revalidatesHits = revalidatesHits
    }

    /// Checks and stores `bytes` as a new image of `ownerID`. `claimedType`, if not empty, must agree with
    /// what the bytes are. Over one of `quotas`: `RESOURCE_EXHAUSTED`, and the blob just written goes again
    /// (unless another image has the same bytes).
    func upload(
        _ bytes: [UInt8], claimedType: String, ownerID: String, app: AppID, id: String, now: Int64,
        quotas: UploadQuotas? = nil
    ) async throws -> ImageRecord {
        guard !bytes.isEmpty else { throw RPCError(code: .invalidArgument, message: "data: required") }
        guard bytes.count <= Self.maximumBytes else {
            throw RPCError(
                code: .invalidArgument, message: "data: \(bytes.count) bytes; an image may have at most 10 MiB")
        }
        let info: ImageInfo
        switch ImageFormat.inspect(bytes) {
        case .success(let found): info = found
        case .failure(let problem): throw RPCError(code: .invalidArgument, message: "data: \(problem)")
        }
        if !claimedType.isEmpty, claimedType.lowercased() != info.type.contentType {
            throw RPCError(
                code: .invalidArgument,
                message: "content_type: the bytes are \(info.type.contentType), not \(claimedType)")
        }
        let made = try await ImageVariantMaker.make(from: bytes)
        let (sha, names) = try await Self.offload { () -> (String, ImageVariantNames) in
            let names = ImageVariantNames(
                large: SHA256.hex(SHA256.hash(made.large.bytes)),
                thumbnail: SHA256.hex(SHA256.hash(made.thumbnail.bytes)))
            return (SHA256.hex(SHA256.hash(bytes)), names)
        }
        try await blobs.write(bytes, sha256: sha)
        try await variants.blobs.write(made.large.bytes, sha256: names.large)
        try await variants.blobs.write(made.thumbnail.bytes, sha256: names.thumbnail)
        let record = ImageRecord(
            id: id, ownerID: ownerID, app: app, sha256: sha, contentType: info.type.contentType, width: info.width,
            height: info.height, byteCount: bytes.count, createdAtMilliseconds: now, variants: names)
        do {
            try await store.insertImage(record, quotas: quotas)
        } catch let exceeded as QuotaExceeded {
            _ = try? await collectGarbage()
            throw exceeded.status
        }
        // A purge may have collected the blobs between our writes and the row's commit; the row now
        // protects them, so writing them again (if gone) is final.
        if try await !blobs.exists(sha256: sha) { try await blobs.write(bytes, sha256: sha) }
        for (name, variant) in [(names.large, made.large.bytes), (names.thumbnail, made.thumbnail.bytes)] {
            if try await !variants.blobs.exists(sha256: name) { try await variants.blobs.write(variant, sha256: name) }
        }
        return record
    }

    /// The image with its bytes, from the cache when it holds it; nil if there is no such image.
    ///
    /// With `revalidatesHits` (replicas on PostgreSQL: another replica may have deleted the image) a hit
    /// still asks the database whether the row is there; it saves the blob read, not the query.
    func image(id: String) async throws -> Image? {
        let cached = cache.get(id)
        if let cached, !revalidatesHits { return cached }
        guard let record = try await store.images(ids: [id]).first else {
            if cached != nil { cache.remove(id) }
            return nil
        }
        if let cached, cached.record.sha256 == record.sha256 { return Image(record: record, bytes: cached.bytes) }
        guard let bytes = try await blobs.read(sha256: record.sha256) else {
            // Purged (through another replica) between the row and the bytes: not there, not lost.
            if try await store.images(ids: [id]).isEmpty { return nil }
            throw RPCError(code: .dataLoss, message: "the bytes of image \(id) are missing")
        }
        let image = Image(record: record, bytes: bytes)
        cache.put(image, forKey: id)
        return image
    }

    /// Forgets deleted images.
    func evict(_ ids: [String]) {
        for id in ids { cache.remove(id) }
    }

    /// Deletes the blobs no image refers to any more (after a purge, and at start for a purge that died
    /// before it got here).
    func collectGarbage() async throws -> Int {
        let blobs = self.blobs
        let variants = self.variants
        return try await store.collectUnreferencedBlobs { sha in
            // A listed name is an original's or a variant's; deleting a name that is not there does nothing.
            try blobs.delete(sha256: sha)
            try variants.blobs.delete(sha256: sha)
            variants.evict(sha)
        }
    }

    /// Hashing 10 MiB off the cooperative pool.
    private static func offload<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(work)
    }
}
