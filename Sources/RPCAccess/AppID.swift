/// One of the apps the services serve as tenants (`yedi`, `slp`, `housetainer`, `zipadoo`): every user
/// token is issued for one, every user belongs to one, and a method declares the apps it serves.
///
/// A string-backed struct rather than an enum: an app is added by configuration (a file per app, read at
/// start) and by the protos that declare its methods, not by changing this type.
public struct AppID: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    /// The hair-designer app the services were first built for; the app of a call that names none.
    public static let yedi: AppID = "yedi"

    /// The longest app name accepted anywhere (metadata, configuration, tokens).
    public static let maximumBytes = 32

    /// An app name as configuration, tokens and the `yedi-app` metadata carry it: 1 to 32 bytes of
    /// lowercase ASCII letters, digits and `-`. Nil for anything else.
    public init?(validating text: String) {
        guard !text.isEmpty, text.utf8.count <= Self.maximumBytes,
            text.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D })
        else { return nil }
        self.rawValue = text
    }

    public static func < (lhs: AppID, rhs: AppID) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { rawValue }
}

/// The apps whose users (and anonymous callers) a method serves: declared in the protos with
/// `(yedi.rpc.apps)` on the service or the method; YeDi alone where nothing is declared.
public enum AppScope: Sendable, Hashable, CustomStringConvertible {
    /// Every app the process is configured for (`apps: "*"`): sign-out and refresh, for example.
    case any
    case only(Set<AppID>)

    public func contains(_ app: AppID) -> Bool {
        switch self {
        case .any: true
        case .only(let apps): apps.contains(app)
        }
    }

    public var description: String {
        switch self {
        case .any: "any app"
        case .only(let apps): apps.sorted().map(\.rawValue).joined(separator: ", ")
        }
    }
}
