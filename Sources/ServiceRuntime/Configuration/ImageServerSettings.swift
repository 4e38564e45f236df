import Foundation

/// Where a service serves images by URL and how it makes the URLs (docs/platform.md, "Images"): the HTTPS
/// port (`--image-port`), the public base apps reach it at (`--image-url-base`), the key that signs the
/// URLs of images that are not public (`--image-url-key`) and how long such a URL stays valid
/// (`--image-url-lifetime`).
public struct ImageServerSettings: Sendable {
    /// 0 lets the system choose (tests).
    public var port: Int
    /// `https://img.example.com` (no trailing slash); nil: `https://<host>:<bound port>`.
    public var urlBase: String?
    /// A file of at least 16 bytes; nil: `<data>/image-url.key`, made on the first start.
    public var keyFile: String?
    public var signedURLLifetime: Duration

    public init(
        port: Int, urlBase: String? = nil, keyFile: String? = nil, signedURLLifetime: Duration = .seconds(86_400)
    ) {
        self.port = port
        self.urlBase = urlBase
        self.keyFile = keyFile
        self.signedURLLifetime = signedURLLifetime
    }

    static func resolve(
        _ options: ServiceOptions, host: String, defaultPort: Int, reader: OptionReader
    ) throws(ConfigurationError) -> Self {
        let base = try reader.url(options.imageUrlBase, flag: "image-url-base")
        // A URL naming a wildcard address reaches nothing: such a process must say where apps find it.
        if base == nil, ["0.0.0.0", "::", "[::]"].contains(host) {
            throw reader.error("image-url-base", "required when --host is \(host): the address apps load images from")
        }
        let key = reader.text(options.imageUrlKey, flag: "image-url-key", default: "")
        let lifetime = try reader.integer(
            options.imageUrlLifetime, flag: "image-url-lifetime", default: 86_400, range: 60...(30 * 86_400))
        return ImageServerSettings(
            port: try reader.integer(options.imagePort, flag: "image-port", default: defaultPort, range: 0...65_535),
            urlBase: base, keyFile: key.isEmpty ? nil : key, signedURLLifetime: .seconds(lifetime))
    }
}
