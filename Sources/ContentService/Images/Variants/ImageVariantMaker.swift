import NIOPosix
import RPCCore
import YediImaging

/// Makes an upload's variants with libvips, on its own two threads.
///
/// Two threads, not one per upload: decoding is where memory goes (a 20-megapixel photo's decode holds
/// tens of MB even streamed), so at most two run at once whatever the number of uploads; the others
/// wait their turn in the pool's queue, each holding only its request's bytes (which the RPC port's
/// connection budget already bounds).
enum ImageVariantMaker {
    struct Made: Sendable {
        var large: JPEGVariant
        var thumbnail: JPEGVariant
    }

    private static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 2)
        pool.start()
        return pool
    }()

    /// The variants of `bytes`, whose own header `ImageFormat` has already checked. libvips reads the
    /// header again and the size it sees must be within the same limits before anything decodes (two
    /// parsers that disagree about a file must not let one of them decode more than the limit).
    /// Undecodable images are `INVALID_ARGUMENT` naming `data`.
    static func make(from bytes: [UInt8]) async throws -> Made {
        try await pool.runIfActive {
            let size: (width: Int, height: Int)
            do {
                size = try ImageHeader.size(of: bytes)
            } catch {
                throw RPCError(code: .invalidArgument, message: "data: \(error)")
            }
            guard size.width <= ImageFormat.maximumSide, size.height <= ImageFormat.maximumSide,
                size.width * size.height <= ImageFormat.maximumPixels
            else {
                throw RPCError(
                    code: .invalidArgument,
                    message: "data: \(size.width)×\(size.height) px is over the limit of \(ImageFormat.maximumSide) "
                        + "px per side and \(ImageFormat.maximumPixels / 1_000_000) megapixels")
            }
            do {
                let large = try JPEGVariant.make(
                    from: bytes, maxSide: ImageVariantSize.large.maxSide, quality: ImageVariantSize.quality)
                // From the large one: a 1280-px JPEG decodes shrunk, far cheaper than the original again.
                let thumbnail = try JPEGVariant.make(
                    from: large.bytes, maxSide: ImageVariantSize.thumbnail.maxSide, quality: ImageVariantSize.quality)
                return Made(large: large, thumbnail: thumbnail)
            } catch {
                throw RPCError(code: .invalidArgument, message: "data: \(error)")
            }
        }
    }
}
