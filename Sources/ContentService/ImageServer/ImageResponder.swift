import Logging
import NIOCore
import NIOHTTP1
import ServiceRuntime
import SmallHTTPServer

/// The image port's answers (docs/platform.md, "Images"): GET and HEAD of `/images/<sha256>.jpg`, signed
/// or public, with an ETag, conditional requests (304) and one byte range (206/416).
///
/// Order of checks: the URL's shape (404), the signature and its expiry (403, before anything is looked
/// up), then the image (404 when missing, or when an unsigned URL names an image no post or review
/// shows). A cached image is answered on the event loop; otherwise the database and the file are read
/// off it.
struct ImageResponder: HTTPResponder {
    /// A content-addressed public URL never changes what it serves: cacheable by anyone for a year.
    static let publicCacheControl = "public, max-age=31536000, immutable"

    let variants: ServedVariants
    let signer: ImageURLSigner
    let clock: any WallClock
    let logger: Logger

    func respond(to request: HTTPRequestHead, on eventLoop: any EventLoop) -> EventLoopFuture<HTTPServerResponse> {
        guard request.method == .GET || request.method == .HEAD else {
            return eventLoop.makeSucceededFuture(.methodNotAllowed)
        }
        let sha: String
        var signedUntil: Int64?
        switch ImageRequest(uri: request.uri) {
        case .notFound:
            return eventLoop.makeSucceededFuture(.text(.notFound, "not found"))
        case .malformedSignature:
            return eventLoop.makeSucceededFuture(.text(.forbidden, "bad signature"))
        case .image(let name, let signature):
            sha = name
            if let signature {
                guard signer.isValid(signature.value, sha256: name, expires: signature.expires) else {
                    return eventLoop.makeSucceededFuture(.text(.forbidden, "bad signature"))
                }
                guard clock.nowMilliseconds / 1_000 < signature.expires else {
                    return eventLoop.makeSucceededFuture(.text(.forbidden, "expired"))
                }
                signedUntil = signature.expires
            }
        }
        let mustBePublic = signedUntil == nil
        let until = signedUntil
        if let cached = variants.cached(sha), cached.isPublic || !mustBePublic {
            return eventLoop.makeSucceededFuture(response(cached, sha: sha, signedUntil: signedUntil, request))
        }
        return eventLoop.makeFutureWithTask {
            guard let variant = try await variants.load(sha, mustBePublic: mustBePublic) else {
                return .text(.notFound, "not found")
            }
            return response(variant, sha: sha, signedUntil: until, request)
        }
    }

    private func response(
        _ variant: ServedVariants.Variant, sha: String, signedUntil: Int64?, _ request: HTTPRequestHead
    ) -> HTTPServerResponse {
        let etag = "\"\(sha)\""
        var headers = HTTPHeaders([
            ("etag", etag),
            ("cache-control", cacheControl(signedUntil)),
            ("x-content-type-options", "nosniff"),
        ])
        if Self.matches(request.headers[canonicalForm: "if-none-match"], etag: etag) {
            return HTTPServerResponse(status: .notModified, headers: headers, body: ByteBuffer())
        }
        headers.add(name: "content-type", value: "image/jpeg")
        headers.add(name: "accept-ranges", value: "bytes")
        let length = variant.bytes.readableBytes
        switch ByteRange(header: request.headers.first(name: "range"), length: length) {
        case .whole:
            return HTTPServerResponse(status: .ok, headers: headers, body: variant.bytes)
        case .part(let range):
            headers.add(name: "content-range", value: "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(length)")
            return HTTPServerResponse(
                status: .partialContent, headers: headers,
                body: variant.bytes.getSlice(at: variant.bytes.readerIndex + range.lowerBound, length: range.count)!)
        case .unsatisfiable:
            headers.add(name: "content-range", value: "bytes */\(length)")
            return HTTPServerResponse(status: .rangeNotSatisfiable, headers: headers, body: ByteBuffer())
        }
    }

    /// Public: a year, shared caches too. Signed: only the client's own cache, and only until the URL
    /// expires (a CDN must not serve it to others, nor past its expiry).
    private func cacheControl(_ signedUntil: Int64?) -> String {
        guard let signedUntil else { return Self.publicCacheControl }
        return "private, max-age=\(max(0, signedUntil - clock.nowMilliseconds / 1_000))"
    }

    /// `If-None-Match: "a", W/"b"` or `*`: weak and strong tags compare alike (RFC 9110's weak comparison).
    static func matches(_ values: [Substring], etag: String) -> Bool {
        values.contains { value in
            let tag = value.hasPrefix("W/") ? value.dropFirst(2) : value
            return tag == "*" || tag == etag
        }
    }
}
