import Logging
import ServiceRuntime
import YediProto

/// Members as Community's lists show them: nickname, photo and type from AccountService's directory
/// (`BatchGetUsers`, cached and forgotten when a member changes), one lookup per reply.
struct CommunityAuthors: Sendable {
    let directory: UserDirectory
    let logger: Logger

    /// The authors of `ids`: an unknown or unreachable member is their id alone.
    func authors(_ ids: [String]) async -> [String: YediHousetainer.Author] {
        let users = await directory.users(Array(Set(ids)), logger: logger)
        return Dictionary(
            uniqueKeysWithValues: Set(ids).map { id in
                let user = users[id]
                return (
                    id,
                    YediHousetainer.Author(
                        id: id, nickname: user?.name ?? "", photoImageID: user?.profileImageID ?? "",
                        type: Self.type(user?.memberType ?? ""))
                )
            })
    }

    static func type(_ stored: String) -> YediHousetainer.MemberType {
        switch stored {
        case "H": .housetainer
        case "h": .hometainer
        case "a": .ordinary
        default: .unspecified
        }
    }
}
