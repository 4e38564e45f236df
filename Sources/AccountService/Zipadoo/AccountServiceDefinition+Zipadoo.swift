import RPCCore
import ServiceRuntime
import YediProto

/// How the AccountService process hosts Zipadoo's friends (docs/zipadoo.md): beside the users they pair,
/// on the accounts' handlers (credentials, limits) and kit.
extension AccountServiceDefinition {
    static func zipadoo(_ env: ServiceEnvironment, account: AccountHandlers) -> ZipadooFriendsHandlers {
        ZipadooFriendsHandlers(
            store: zipadooStore(env),
            account: account,
            imageOwner: { [peers = env.peers] imageID in
                do {
                    let content = YediContent.ContentService.Client(try peers.client(for: "content"))
                    let answer = try await content.getImageRefs(
                        .init(imageIDs: [imageID]), options: CallOptions(timeout: .seconds(2)))
                    return answer.images.first { $0.image?.id == imageID }?.ownerID
                } catch let error as RPCError where error.code != .unavailable {
                    throw RPCError(code: .unavailable, message: "the image cannot be checked now: \(error.message)")
                }
            })
    }
}
