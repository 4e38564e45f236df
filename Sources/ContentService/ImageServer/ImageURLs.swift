import NIOConcurrencyHelpers
import ServiceRuntime
import YediProto

/// The URLs replies put in `ImageRef.url` and `thumbnail_url`: `<base>/images/<sha256>.jpg`, the name of
/// the variant's bytes (docs/platform.md, "Images"), plus `?expires=<unix seconds>&signature=<HMAC>` for
/// images that are not public.
///
/// Which images are public is decided where the reply is made: post and review photos are (anyone sees
/// the post); uploads, chat photos and whatever `GetImage` is asked for get signed URLs. A signed URL's
/// expiry is rounded up to the next whole hour past the lifetime, so replies within the same hour give
/// the same URL and an app's HTTP cache keeps working.
final class ImageURLs: Sendable {
    enum Access: Sendable {
        /// Served to anyone; immutable and cached for a year by browsers and CDNs.
        case isPublic
        /// Signed, valid for the configured lifetime (`--image-url-lifetime`).
        case signed
    }

    static let pathPrefix = "/images/"
    static let pathSuffix = ".jpg"

    let signer: ImageURLSigner
    private let base: NIOLockedValueBox<String>
    private let lifetimeSeconds: Int64
    private let clock: any WallClock

    /// `base`: `https://host:port` without a trailing slash; "" until known (`setBase`).
    init(base: String, signer: ImageURLSigner, lifetime: Duration, clock: any WallClock) {
        self.base = NIOLockedValueBox(base)
        self.signer = signer
        self.lifetimeSeconds = lifetime.components.seconds
        self.clock = clock
    }

    /// For a port the system picked: known once the image server has bound it.
    func setBase(_ base: String) {
        self.base.withLockedValue { $0 = base }
    }

    /// `https://host:port`; "" until the image server has bound a port the system picked.
    var baseURL: String { base.withLockedValue { $0 } }

    func ref(_ image: ImageRecord, _ access: Access) -> YediCommon.ImageRef {
        YediCommon.ImageRef(
            id: image.id, url: image.variants.map { url($0.large, access) } ?? "", width: Int32(image.width),
            height: Int32(image.height), thumbnailURL: image.variants.map { url($0.thumbnail, access) } ?? "")
    }

    func url(_ sha256: String, _ access: Access) -> String {
        let plain = baseURL + Self.pathPrefix + sha256 + Self.pathSuffix
        switch access {
        case .isPublic:
            return plain
        case .signed:
            let expires = (clock.nowMilliseconds / 1_000 + lifetimeSeconds) / 3_600 * 3_600 + 3_600
            return plain + "?expires=\(expires)&signature=\(signer.signature(sha256: sha256, expires: expires))"
        }
    }
}
