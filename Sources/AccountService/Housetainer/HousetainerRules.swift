import RPCAccess
import RPCCore
import YediProto

/// Housetainer's fixed numbers and words (docs/housetainer.md); the app file's `limits` override the
/// numbers it names.
enum HousetainerRules {
    static let app: AppID = "housetainer"
    /// A sign-up ticket from SignIn works 30 minutes.
    static let ticketLifetime: Int64 = 30 * 60 * 1_000
    static let defaultQuota = 3
    static let defaultCodeDays = 7
    /// The documents a signup accepts: 이용약관, 개인정보 제공 동의 (필수), EULA.
    static let terms = ["terms", "privacy", "eula"]
    static let nicknameTaken = "이미 사용중인 닉네임입니다."

    /// The stored letter of a type an admin sets; `INVALID_ARGUMENT` naming `type` for UNSPECIFIED.
    static func storedType(_ type: YediHousetainer.MemberType) throws(RPCError) -> String {
        switch type {
        case .housetainer: "H"
        case .hometainer: "h"
        case .ordinary: "a"
        default: throw RPCError(code: .invalidArgument, message: "type: HOUSETAINER, HOMETAINER or ORDINARY")
        }
    }

    static func type(_ stored: String) -> YediHousetainer.MemberType {
        switch stored {
        case "H": .housetainer
        case "h": .hometainer
        default: .ordinary
        }
    }

    /// The status of each store refusal, naming the field it is about.
    static func refusal(_ error: HousetainerStoreError) -> RPCError {
        switch error {
        case .ticketUnknown: RPCError(code: .unauthenticated, message: "ticket: unknown, expired or already used")
        case .codeUnknown: RPCError(code: .notFound, message: "code: does not exist")
        case .codeForAnotherAddress: RPCError(code: .permissionDenied, message: "code: sent to another address")
        case .codeUsed: RPCError(code: .failedPrecondition, message: "code: expired")
        case .quotaExceeded:
            RPCError(code: .resourceExhausted, message: "invitations: at most 3 sent or joined invitations")
        case .alreadyMember:
            RPCError(code: .failedPrecondition, message: "invitee_email: already a member (or your own)")
        case .nicknameTaken: RPCError(code: .alreadyExists, message: "nickname: \(nicknameTaken)")
        case .identityTaken:
            RPCError(code: .alreadyExists, message: "ticket: this account is a member already; sign in")
        case .notFound: RPCError(code: .notFound, message: "member_id: no such member")
        }
    }
}
