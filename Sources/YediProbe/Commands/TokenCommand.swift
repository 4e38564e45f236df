import AccessTokens
import ArgumentParser
import Foundation
import RPCAccess
import RPCCore

/// `yedi-probe token --user ID --role ROLE`: mints an access token with the token signing key file,
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

            --key defaults to the dev PKI's token-signing.key (deploy/dev-pki.sh makes it), found like \
            the probe's other dev PKI defaults ($YEDI_PKI, deploy/pki here or above, or in the probe's checkout).
            """
    )

    /// Where `deploy/dev-pki.sh` writes the dev token signing key, relative to the repository root.
    static let defaultKeyFile = "deploy/pki/token-signing.key"
    static let maximumLifetime = 30 * 24 * 3600

    /// The roles a token can be minted for (what `UserRole` names today).
    enum Role: String, CaseIterable, ExpressibleByArgument {
        case customer
        case designer
    }

    @Option(help: ArgumentHelp("The user id (the token's sub).", valueName: "id"))
    var user: String

    @Option(help: ArgumentHelp("The user's role.", valueName: "customer|designer"))
    var role: Role

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
            role: UserRole(rawValue: role.rawValue),
            sessionID: session
        )
        Output.line(token)
    }
}
