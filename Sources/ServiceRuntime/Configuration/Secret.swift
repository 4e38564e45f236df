/// A credential (an API key, an access token) read from a file or an environment variable at start.
///
/// Why a type: it prints as `<secret>` however it is interpolated, dumped or mirrored, so a
/// configuration or an error that holds one can be logged without leaking it. Only the code that puts it
/// in a request header reads `value`.
public struct Secret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let value: String

    public init(_ value: String) {
        self.value = value
    }

    public var description: String { "<secret>" }
    public var debugDescription: String { "<secret>" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
