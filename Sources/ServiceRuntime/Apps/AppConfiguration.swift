import Foundation
import RPCAccess

/// One app's configuration, read from `<apps folder>/<app>.json` at start (`AppCatalog`): what differs
/// between the apps the services serve as tenants, kept out of code so an app's catalogue changes without
/// a release.
///
/// Read strictly: an unknown key, a role or app name that is not `a-z 0-9 -`, a negative limit or an
/// oversized catalogue stops the start with a message naming the file and the key, rather than serving
/// with a typo.
public struct AppConfiguration: Sendable, Hashable {
    public let app: AppID
    /// The name people see (`YeDi`, `SLP`).
    public let displayName: String
    /// Every role a token of this app may carry; a token with another is refused.
    public let roles: Set<UserRole>
    /// The roles that moderate (list reports, answer inquiries, suspend members); a subset of `roles`.
    public let operatorRoles: Set<UserRole>
    /// How members sign in: `email-password`, `phone`, `apple`, `google`, `kakao`, `naver`.
    public let signIn: Set<String>
    /// Named numbers the app's rules read (`nearby_radius_m`, `invitations_per_member`).
    public let limits: [String: Int]
    /// Named lists the app's rules read (review keywords, report reasons, avatars).
    public let catalogues: [String: [String]]
    /// Words a nickname may not contain (compared case-insensitively).
    public let bannedNicknameWords: [String]
    /// How long the app's personal data of each kind is kept, in days (`live_position`).
    public let retentionDays: [String: Int]
    /// The app's client ids at each sign-in provider (`apple`: bundle/service ids, `google`: OAuth client
    /// ids, `kakao`: app ids, `naver`: client ids): a provider's token counts only when issued to one of
    /// them (its audience). Not secrets: they ship inside the apps.
    public let providerClientIDs: [String: [String]]

    public static let signInMethods: Set<String> = ["email-password", "phone", "apple", "google", "kakao", "naver"]
    /// The sign-in methods that are providers (`provider_client_ids`' keys).
    public static let providers: Set<String> = ["apple", "google", "kakao", "naver"]

    /// YeDi as the services served it before apps were configured: its two roles, e-mail sign-in.
    public static let yedi = AppConfiguration(
        app: .yedi, displayName: "YeDi", roles: [.customer, .designer], operatorRoles: [],
        signIn: ["email-password"], limits: [:], catalogues: [:], bannedNicknameWords: [], retentionDays: [:],
        providerClientIDs: [:])

    public init(
        app: AppID, displayName: String, roles: Set<UserRole>, operatorRoles: Set<UserRole>, signIn: Set<String>,
        limits: [String: Int], catalogues: [String: [String]], bannedNicknameWords: [String],
        retentionDays: [String: Int], providerClientIDs: [String: [String]] = [:]
    ) {
        self.app = app
        self.displayName = displayName
        self.roles = roles
        self.operatorRoles = operatorRoles
        self.signIn = signIn
        self.limits = limits
        self.catalogues = catalogues
        self.bannedNicknameWords = bannedNicknameWords
        self.retentionDays = retentionDays
        self.providerClientIDs = providerClientIDs
    }

    /// A named limit, or `fallback` when the file does not set it.
    public func limit(_ name: String, default fallback: Int) -> Int { limits[name] ?? fallback }

    /// Whether `nickname` contains a banned word, both compared after NFKC and case folding: "ADMIN",
    /// full-width "ａｄｍｉｎ" and "Ａｄｍｉｎ" all contain "admin".
    public func nicknameIsBanned(_ nickname: String) -> Bool {
        let folded = Self.fold(nickname)
        return bannedNicknameWords.contains { folded.contains(Self.fold($0)) }
    }

    /// NFKC, then case folding, then NFKC again (folding may leave a string unnormalised).
    static func fold(_ text: String) -> String {
        text.precomposedStringWithCompatibilityMapping.folding(options: [.caseInsensitive], locale: nil)
            .precomposedStringWithCompatibilityMapping
    }
}

extension AppConfiguration {
    /// The most bytes an app file may hold, and a catalogue's most entries and bytes per entry.
    static let maximumFileBytes = 256 * 1_024
    static let maximumEntries = 1_000
    static let maximumEntryBytes = 200

    private static let keys: Set<String> = [
        "app", "name", "roles", "operator_roles", "sign_in", "limits", "catalogues", "banned_nickname_words",
        "retention_days", "provider_client_ids",
    ]

    /// The file as written: snake_case keys, every one required.
    private struct File: Decodable {
        var app: String
        var name: String
        var roles: [String]
        var operatorRoles: [String]
        var signIn: [String]
        var limits: [String: Int]
        var catalogues: [String: [String]]
        var bannedNicknameWords: [String]
        var retentionDays: [String: Int]
        var providerClientIDs: [String: [String]]

        enum CodingKeys: String, CodingKey {
            case app, name, roles, limits, catalogues
            case operatorRoles = "operator_roles"
            case signIn = "sign_in"
            case bannedNicknameWords = "banned_nickname_words"
            case retentionDays = "retention_days"
            case providerClientIDs = "provider_client_ids"
        }
    }

    /// Parses one app file; `file` names it in errors.
    static func parse(_ data: Data, file: String) throws(ConfigurationError) -> AppConfiguration {
        func bad(_ problem: String) -> ConfigurationError {
            ConfigurationError(option: "--apps (YEDI_APPS)", problem: "\(file): \(problem)")
        }
        guard data.count <= maximumFileBytes else { throw bad("larger than \(maximumFileBytes) bytes") }
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw bad("not a JSON object")
        }
        if let unknown = Set(object.keys).subtracting(keys).sorted().first {
            throw bad("unknown key \"\(unknown)\"; the keys are \(keys.sorted().joined(separator: ", "))")
        }
        let decoded: File
        do {
            decoded = try JSONDecoder().decode(File.self, from: data)
        } catch let DecodingError.keyNotFound(key, _) {
            throw bad("\"\(key.stringValue)\" is required")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw bad("\"\(path)\" has the wrong type (names are lists of text, limits whole numbers)")
        } catch {
            throw bad("not a valid app file: \(error)")
        }
        func names(_ list: [String], _ key: String) throws(ConfigurationError) -> [String] {
            for name in list where AppID(validating: name) == nil {
                throw bad("\"\(key)\": \"\(name)\" is not a name of 1 to 32 characters a-z, 0-9, -")
            }
            return list
        }
        func texts(_ list: [String], _ key: String) throws(ConfigurationError) -> [String] {
            guard list.count <= maximumEntries, list.allSatisfy({ !$0.isEmpty && $0.utf8.count <= maximumEntryBytes })
            else {
                throw bad(
                    "\"\(key)\" must be a list of at most \(maximumEntries) texts of 1 to \(maximumEntryBytes) bytes")
            }
            return list
        }
        func counts(_ table: [String: Int], _ key: String) throws(ConfigurationError) -> [String: Int] {
            if let (name, _) = table.first(where: { $0.value < 0 }) {
                throw bad("\"\(key)\".\"\(name)\" must be a whole number, 0 or more")
            }
            return table
        }
        guard let app = AppID(validating: decoded.app) else {
            throw bad("\"app\" must be the app's name (a-z, 0-9, -; at most 32)")
        }
        guard URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent == decoded.app else {
            throw bad("\"app\" is \"\(decoded.app)\": the file must be named \(decoded.app).json")
        }
        guard !decoded.name.isEmpty, decoded.name.utf8.count <= 100 else {
            throw bad("\"name\" must be a text of 1 to 100 bytes")
        }
        let roles = Set(try names(decoded.roles, "roles").map(UserRole.init(rawValue:)))
        guard !roles.isEmpty else { throw bad("\"roles\" must name at least one role") }
        let operatorRoles = Set(try names(decoded.operatorRoles, "operator_roles").map(UserRole.init(rawValue:)))
        guard operatorRoles.isSubset(of: roles) else { throw bad("\"operator_roles\" must be among \"roles\"") }
        let signIn = Set(try names(decoded.signIn, "sign_in"))
        guard !signIn.isEmpty, signIn.isSubset(of: signInMethods) else {
            throw bad("\"sign_in\" must name one or more of \(signInMethods.sorted().joined(separator: ", "))")
        }
        var catalogues: [String: [String]] = [:]
        for (name, list) in decoded.catalogues { catalogues[name] = try texts(list, "catalogues.\(name)") }
        var providerClientIDs: [String: [String]] = [:]
        for (provider, ids) in decoded.providerClientIDs {
            guard providers.contains(provider) else {
                throw bad(
                    "\"provider_client_ids\": \"\(provider)\" is not one of \(providers.sorted().joined(separator: ", "))"
                )
            }
            providerClientIDs[provider] = try texts(ids, "provider_client_ids.\(provider)")
        }
        return AppConfiguration(
            app: app, displayName: decoded.name, roles: roles, operatorRoles: operatorRoles, signIn: signIn,
            limits: try counts(decoded.limits, "limits"), catalogues: catalogues,
            bannedNicknameWords: try texts(decoded.bannedNicknameWords, "banned_nickname_words"),
            retentionDays: try counts(decoded.retentionDays, "retention_days"), providerClientIDs: providerClientIDs)
    }
}
