import Foundation
import RPCAccess

/// The apps a process serves, one `AppConfiguration` each: loaded at start from `--apps <folder>` (a
/// `<app>.json` per app; `deploy/apps/` holds the four), YeDi alone without the option.
///
/// What it decides: a token of an app not here, or with a role its app does not list, is refused
/// (`JWTVerifier`), and so is an anonymous call naming such an app (`AuthenticationInterceptor`); handlers
/// read their app's limits and catalogues from `env.apps[context.app]`.
public struct AppCatalog: Sendable {
    public let apps: [AppID: AppConfiguration]

    public init(_ configurations: [AppConfiguration]) {
        apps = Dictionary(configurations.map { ($0.app, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// YeDi alone, as configured before apps were tenants.
    public static let yediOnly = AppCatalog([.yedi])

    public subscript(app: AppID) -> AppConfiguration? { apps[app] }

    /// The apps served.
    public var served: Set<AppID> { Set(apps.keys) }

    /// Each app's roles: what the token verifier accepts.
    public var roles: [AppID: Set<UserRole>] { apps.mapValues(\.roles) }

    /// The apps `configuration` names: its `--apps` folder's, or YeDi alone.
    public static func load(_ configuration: ServiceConfiguration) throws(ConfigurationError) -> AppCatalog {
        guard let folder = configuration.appsFolder else { return .yediOnly }
        return try load(folder: folder)
    }

    /// Every `*.json` in `folder`, one app each; a folder with none, or two files for one app, is refused.
    public static func load(folder: String) throws(ConfigurationError) -> AppCatalog {
        let option = "--apps (YEDI_APPS)"
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".json") }
                .sorted()
        } catch {
            throw ConfigurationError(option: option, problem: "cannot read the folder \(folder): \(error)")
        }
        guard !names.isEmpty else { throw ConfigurationError(option: option, problem: "\(folder) has no <app>.json") }
        var configurations: [AppConfiguration] = []
        for name in names {
            let path = (folder as NSString).appendingPathComponent(name)
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError(option: option, problem: "cannot read \(path)")
            }
            configurations.append(try AppConfiguration.parse(data, file: path))
        }
        return AppCatalog(configurations)
    }
}
