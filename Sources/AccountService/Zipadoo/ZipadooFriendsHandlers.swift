import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// `yedi.zipadoo.Friends`: Zipadoo's sign-up, profile and friendships (docs/zipadoo.md). Sign-up reuses
/// the accounts' password rule and hasher, sign-in limits and sessions; the friendships' decisions are
/// the store's, each in one transaction.
struct ZipadooFriendsHandlers: YediZipadoo.Friends.ServiceProtocol, HandlerKitUser {
    let store: any ZipadooFriendStore
    /// The accounts' handlers: credentials (hasher, sessions) and the per-address sign-in limits.
    let account: AccountHandlers
    /// Who uploaded an image (ContentService's `GetImageRefs`, which also pins it): nil for no such image;
    /// throws `UNAVAILABLE` when ContentService cannot answer.
    let imageOwner: @Sendable (_ imageID: String) async throws -> String?
    var kit: HandlerKit { account.kit }

    func signUp(_ request: YediZipadoo.SignUpRequest, context: ServerContext) async throws
        -> YediZipadoo.SignUpResponse
    {
        let email = try FieldRule.email(request.email)
        try FieldRules.password(request.password)
        let name = try FieldRule.name(request.name, field: "name")
        let nickname = try ZipadooFields.nickname(request.nickname)
        let phone = try ZipadooFields.phone(request.phone)
        let mole = try ZipadooFields.mole(request.mole)
        let address = try account.admit(context)
        let hash = try await account.kdf {
            try await account.credentials.passwords.hash(request.password, key: address, deadline: context.deadline)
        }
        let user = UserRecord(
            id: ids.next(), role: "member", app: SQLiteZipadooFriendStore.app, email: email, name: name, phone: phone,
            gender: 0, birthDate: nil, passwordHash: hash, createdAtMilliseconds: clock.nowMilliseconds,
            nickname: nickname)
        let refresh = account.credentials.sessions.newRefreshToken(userID: user.id)
        try await mapped { try await store.signUp(user, mole: mole, session: refresh.record) }
        guard let profile = try await store.profile(userID: user.id) else { throw Self.refusal(.unknownUser) }
        return YediZipadoo.SignUpResponse(
            profile: Self.profile(profile),
            session: try account.credentials.sessions.session(for: user, refresh: refresh))
    }

    func getProfile(_ request: YediZipadoo.GetProfileRequest, context: ServerContext) async throws
        -> YediZipadoo.Profile
    {
        let user = try context.requireUser()
        guard let profile = try await store.profile(userID: user.id) else { throw Self.refusal(.unknownUser) }
        return Self.profile(profile)
    }

    func updateProfile(_ request: YediZipadoo.UpdateProfileRequest, context: ServerContext) async throws
        -> YediZipadoo.Profile
    {
        let user = try context.requireUser()
        let image = try FieldRule.imageID(request.profileImageID, field: "profile_image_id")
        let nickname = try ZipadooFields.nickname(request.nickname)
        let phone = try ZipadooFields.phone(request.phone)
        let mole = try ZipadooFields.mole(request.mole)
        guard let current = try await store.profile(userID: user.id) else { throw Self.refusal(.unknownUser) }
        if !image.isEmpty, image != current.member.profileImageID {
            guard let owner = try await imageOwner(image) else {
                throw RPCError(code: .notFound, message: "profile_image_id: no such image")
            }
            guard owner == user.id else {
                throw RPCError(code: .permissionDenied, message: "profile_image_id: not an image you uploaded")
            }
        }
        return Self.profile(
            try await mapped {
                try await store.updateProfile(
                    userID: user.id, imageID: image, nickname: nickname, phone: phone, mole: mole)
            })
    }

    func requestFriend(_ request: YediZipadoo.NicknameRequest, context: ServerContext) async throws
        -> YediZipadoo.FriendRequestResponse
    {
        let user = try context.requireUser()
        // Any text: a nickname no one can have is simply no one's (NOT_FOUND, the first refusal).
        let nickname = try FieldRule.id(request.nickname, field: "nickname")
        _ = try await mapped { try await store.request(from: user.id, nickname: nickname, now: clock.nowMilliseconds) }
        return YediZipadoo.FriendRequestResponse()
    }

    func acceptFriend(_ request: YediZipadoo.UserRequest, context: ServerContext) async throws
        -> YediZipadoo.FriendChangeResponse
    {
        let user = try context.requireUser()
        let other = try FieldRule.id(request.userID, field: "user_id")
        try await mapped { try await store.accept(userID: user.id, requester: other, now: clock.nowMilliseconds) }
        return YediZipadoo.FriendChangeResponse()
    }

    func declineFriend(_ request: YediZipadoo.UserRequest, context: ServerContext) async throws
        -> YediZipadoo.FriendChangeResponse
    {
        let user = try context.requireUser()
        let other = try FieldRule.id(request.userID, field: "user_id")
        try await mapped { try await store.decline(userID: user.id, requester: other) }
        return YediZipadoo.FriendChangeResponse()
    }

    func removeFriend(_ request: YediZipadoo.UserRequest, context: ServerContext) async throws
        -> YediZipadoo.FriendChangeResponse
    {
        let user = try context.requireUser()
        let other = try FieldRule.id(request.userID, field: "user_id")
        try await mapped { try await store.remove(userID: user.id, friend: other) }
        return YediZipadoo.FriendChangeResponse()
    }

    func listFriends(_ request: YediZipadoo.ListFriendsRequest, context: ServerContext) async throws
        -> YediZipadoo.ListFriendsResponse
    {
        let user = try context.requireUser()
        return YediZipadoo.ListFriendsResponse(friends: try await store.friends(of: user.id).map(Self.member))
    }

    func listFriendRequests(_ request: YediZipadoo.ListFriendRequestsRequest, context: ServerContext) async throws
        -> YediZipadoo.ListFriendRequestsResponse
    {
        let user = try context.requireUser()
        let (incoming, outgoing) = try await store.requests(of: user.id)
        return YediZipadoo.ListFriendRequestsResponse(
            requesters: incoming.map(Self.member), requested: outgoing.map(Self.member))
    }

    func checkFriends(_ request: YediZipadoo.CheckFriendsRequest, context: ServerContext) async throws
        -> YediZipadoo.CheckFriendsResponse
    {
        let user = try FieldRule.id(request.userID, field: "user_id")
        let candidates = try FieldRule.batch(request.candidateIDs, field: "candidate_ids")
        return YediZipadoo.CheckFriendsResponse(
            friendIDs: try await store.friendIDs(of: user, among: candidates))
    }

    // MARK: Messages and refusals

    func mapped<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ZipadooFriendError {
            throw Self.refusal(error)
        }
    }

    static func refusal(_ error: ZipadooFriendError) -> RPCError {
        switch error {
        case .noSuchNickname: RPCError(code: .notFound, message: "nickname: 해당 닉네임을 가진 사용자가 없습니다 (no such member)")
        case .yourself:
            RPCError(code: .invalidArgument, message: "nickname: 본인에게는 친구요청 할 수 없습니다 (that is you)")
        case .alreadyFriends: RPCError(code: .alreadyExists, message: "user: 이미 친구입니다 (already friends)")
        case .alreadyRequested:
            RPCError(code: .alreadyExists, message: "user: 이미 요청한 친구입니다 (you already asked them)")
        case .theyRequested:
            RPCError(
                code: .failedPrecondition, message: "user: 이미 요청받은 친구입니다 (they asked you: accept instead)")
        case .notRecipient:
            RPCError(code: .permissionDenied, message: "user_id: only the recipient answers a friend request")
        case .noRequest: RPCError(code: .notFound, message: "user_id: no pending friend request")
        case .notFriends: RPCError(code: .notFound, message: "user_id: not a friend of yours")
        case .unknownUser: RPCError(code: .notFound, message: "user_id: no such Zipadoo member")
        case .emailTaken: RPCError(code: .alreadyExists, message: "email: already has a Zipadoo account")
        case .nicknameTaken: RPCError(code: .alreadyExists, message: "nickname: already taken")
        }
    }

    static func member(_ record: ZipadooMemberRecord) -> YediZipadoo.Member {
        YediZipadoo.Member(
            userID: record.userID, nickname: record.nickname, name: record.name, mole: record.mole,
            profileImageID: record.profileImageID)
    }

    static func profile(_ record: ZipadooProfileRecord) -> YediZipadoo.Profile {
        YediZipadoo.Profile(
            member: member(record.member), email: record.email, phone: record.phone,
            createdAtMs: record.createdAtMilliseconds)
    }
}
