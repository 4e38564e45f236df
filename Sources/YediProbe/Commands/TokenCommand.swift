import AccessTokens
import ArgumentParser
import Foundation
import RPCAccess
import RPCCore

/// `yedi-probe token --user ID --role ROLE [--app APP]`: mints an access token with the token signing key file,
/// so developers can call authenticated methods without signing in (the dev key only: whoever holds a
/// signing key can act as anyone).
struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Prints an access token for a user, signed with a token signing key (development).",
        discussion: """
            Example:
              yedi-probe call 127.0.0.1:7001 yedi.account.AccountService/GetUser '{"userId": "u-1"}' \\
                --token "$(yedi-probe token --user u-1 --role customer)"
              yedi-probe token --user u-2 --app slp --role member

            A role is any role of the app (deploy/apps/<app>.json lists them; YeDi's are customer and \
            designer); a service refuses a token of an app or role it is not configured for.

            --key defaults to the dev PKI's token-signing.key (deploy/dev-pki.sh makes it), found like \
            the probe's other dev PKI defaults ($YEDI_PKI, deploy/pki here or above, or in the probe's checkout).
            """
    )

    /// Where `deploy/dev-pki.sh` writes the dev token signing key, relative to the repository root.
    static let defaultKeyFile = "deploy/pki/token-signing.key"
    static let maximumLifetime = 30 * 24 * 3600

    @Option(help: ArgumentHelp("The user id (the token's sub).", valueName: "id"))
    var user: String

    @Option(help: ArgumentHelp("The user's role in the app (YeDi: customer or designer).", valueName: "role"))
    var role: String

    @Option(help: ArgumentHelp("The app the token is for (its app and aud; default: yedi).", valueName: "app"))
    var app: String = AppID.yedi.rawValue

    @Option(
        help: ArgumentHelp(
            "The Ed25519 private key PEM to sign with (default: \(defaultKeyFile)).",
            valueName: "file"
        )
    )
    var key: String?

    @Option(help: ArgumentHelp("The token's lifetime in seconds (default: 900).", valueName: "seconds"))
    var ttl: Int = 900

    @Option(help: ArgumentHelp("The session id (the token's sid).", valueName: "id"))
    var session: String?

    func validate() throws {
        guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
        guard AppID(validating: app) != nil else {
            throw ValidationError("--app must be an app name: 1 to 32 characters a-z, 0-9, -")
        }
        guard AppID(validating: role) != nil else {
            throw ValidationError("--role must be a role name: 1 to 32 characters a-z, 0-9, -")
        }
        if app == AppID.yedi.rawValue, ![UserRole.customer, .designer].contains(UserRole(rawValue: role)) {
            throw ValidationError("--role \(role): YeDi's roles are customer and designer (another app's: --app)")
        }
        guard (1...Self.maximumLifetime).contains(ttl) else {
            throw ValidationError("--ttl must be 1...\(Self.maximumLifetime) seconds")
        }
    }

    func run() throws {
        let path = key ?? DevPKI.file("token-signing.key") ?? Self.defaultKeyFile
        let signingKey: TokenSigningKey
        do {
            signingKey = try TokenSigningKey.load(pemFile: path)
        } catch {
            let hint = key == nil ? " (run deploy/dev-pki.sh in the repository root, or pass --key FILE)" : ""
            throw ProbeError("\(error)\(hint)", exitCode: ExitStatus.cannotReadInput)
        }
        let issuer = AccessTokenIssuer(signingKey: signingKey, lifetime: .seconds(ttl))
        let (token, _) = try issuer.issue(
            userID: user,
            role: UserRole(rawValue: role),
            sessionID: session,
            app: AppID(rawValue: app)
        )
        Output.line(token)
    }
}
