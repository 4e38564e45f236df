/// The resized copies made of every upload, the ones apps load by URL (docs/platform.md, "Images").
///
/// Both are JPEGs at quality 80 (libvips's `Q`, with optimised Huffman tables): where a phone photo's
/// artefacts stop showing on a phone screen, at about a tenth of a camera JPEG's bytes. Smaller images
/// keep their size (never enlarged) but are re-encoded all the same, so every variant is a JPEG without
/// metadata: a photo's EXIF, with its GPS position, never leaves the service by URL.
enum ImageVariantSize: String, Sendable, CaseIterable {
    /// What a post or a chat photo shows full-screen: the longest side at most 1280 px.
    case large
    /// What lists and grids show: the longest side at most 400 px (a third of a 1080-px-wide screen,
    /// with room for a 3× display's column).
    case thumbnail

    var maxSide: Int {
        switch self {
        case .large: 1_280
        case .thumbnail: 400
        }
    }

    static let quality = 80
}
