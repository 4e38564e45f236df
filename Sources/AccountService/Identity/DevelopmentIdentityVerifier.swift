import RPCAccess
import RPCCore

/// Lets a person (or a test) sign in with a provider offline: with `--development`, the provider token
/// `dev:<provider>:<subject>` (or `dev:<provider>:<subject>:<email>`) proves `<provider>:<subject>`
/// without asking anyone. Outside development such a token is refused, never passed to a provider. Every
/// other assertion goes to `next`.
struct DevelopmentIdentityVerifier: IdentityVerifier {
    /// `--development`.
    let enabled: Bool
    let next: any IdentityVerifier

    static let prefix = "dev:"

    func verify(_ assertion: IdentityAssertion, app: AppID) async throws -> VerifiedIdentity {
        guard case .provider(let name, let token) = assertion, token.hasPrefix(Self.prefix) else {
            return try await next.verify(assertion, app: app)
        }
        guard enabled else {
            throw RPCError(
                code: .unauthenticated, message: "token: development assertions work only with --development")
        }
        let parts = token.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 3, parts[1] == name, Self.isSubject(parts[2]) else {
            throw RPCError(
                code: .unauthenticated, message: "token: a development assertion is dev:\(name):<subject>[:<email>]")
        }
        let email = parts.count == 4 ? parts[3] : nil
        return VerifiedIdentity(kind: name, subject: parts[2], email: email?.isEmpty == false ? email : nil)
    }

    /// 1 to 64 of `A-Z a-z 0-9 . _ -`.
    static func isSubject(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".")
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
    }
}
