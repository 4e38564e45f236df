/// Why libvips could not read or write an image, in its own words (for the caller's status message).
public struct ImagingError: Error, Equatable, CustomStringConvertible, Sendable {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
