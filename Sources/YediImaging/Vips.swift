import CVips
import Foundation

/// libvips, started once per process on first use (`VIPS_INIT` must run once, before any operation), and
/// the two things every call does: turn a failure into an `ImagingError` with libvips's text, and copy an
/// output buffer into Swift memory before freeing it.
enum Vips {
    /// Swift runs a global's initialiser once, thread-safely: that is the "once per process".
    private static let started: Result<Void, ImagingError> = {
        if yedi_vips_start() != 0 { return .failure(takeError("libvips did not start")) }
        return .success(())
    }()

    static func start() throws(ImagingError) {
        try started.get()
    }

    /// The failure of the operation that just returned non-zero, with libvips's own words (bounded).
    static func takeError(_ what: String) -> ImagingError {
        var text = [CChar](repeating: 0, count: 512)
        yedi_vips_take_error(&text, text.count)
        let detail = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return ImagingError(detail.isEmpty ? what : "\(what): \(detail)")
    }

    /// Copies a buffer libvips allocated and frees it.
    static func take(_ pointer: UnsafeMutableRawPointer?, count: Int) -> [UInt8] {
        defer { yedi_vips_free(pointer) }
        guard let pointer, count > 0 else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
