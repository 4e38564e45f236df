import CVips

/// What libvips reads of an image before decoding any pixel.
public enum ImageHeader {
    /// The pixel size libvips sees, from the header only. Callers check it against their limits before
    /// asking for anything that decodes (`JPEGVariant.make`): a few bytes of header can claim any size.
    public static func size(of bytes: [UInt8]) throws(ImagingError) -> (width: Int, height: Int) {
        try Vips.start()
        var width: Int32 = 0
        var height: Int32 = 0
        let failed = bytes.withUnsafeBytes { yedi_vips_header($0.baseAddress, $0.count, &width, &height) }
        guard failed == 0 else { throw Vips.takeError("not a readable image") }
        return (Int(width), Int(height))
    }
}
