import RPCCore
import ServiceRuntime
import YediProto

/// What ChatService asks other services, as plain functions so tests and handlers need no peer clients.
///
/// Failures: checks that decide whether a message may be sent (image, post, reservation) are refused with
/// UNAVAILABLE when the peer cannot answer (nothing unchecked is stored); names and images of the room
/// list degrade to empty instead (see `UserDirectory` in ServiceRuntime).
struct ChatPeers: Sendable {
    struct OwnedImage: Sendable, Hashable {
        var image: ImageRecord
        var ownerID: String
    }

    struct PostPreview: Sendable, Hashable {
        var postID: String
        var designerID: String
        var title: String
        var firstPhoto: ImageRecord?
    }

    struct Reservation: Sendable, Hashable {
        var id: String
        var customerID: String
        var designerID: String
        var startAtMilliseconds: Int64
    }

    struct Profile: Sendable, Hashable {
        var userID: String
        var name: String
        var profileImageID: String
        var isDesigner: Bool
    }

    /// The images among the ids that exist.
    var images: @Sendable ([String]) async throws -> [OwnedImage]
    /// The posts among the ids that exist.
    var posts: @Sendable ([String]) async throws -> [PostPreview]
    /// The reservation, or nil if BookingService does not know it.
    var reservation: @Sendable (String) async throws -> Reservation?
    /// The users among the ids that exist (at most 100 ids), asked each time: OpenRoom's check that the
    /// designer exists (names shown come from the cached `UserDirectory`).
    var profiles: @Sendable ([String]) async throws -> [Profile]
    /// An SLP match's two members if it is active (AccountService's `GetMatch`); nil otherwise.
    var activeMatch: @Sendable (String) async throws -> (String, String)?

    static let timeout = CallOptions(timeout: .seconds(2))

    /// The real peers of `env` (content, booking, account).
    static func live(_ peers: ServicePeers) -> ChatPeers {
        ChatPeers(
            images: { ids in
                let content = YediContent.ContentService.Client(try peers.client(for: "content"))
                let answer = try await content.getImageRefs(.init(imageIDs: ids), options: timeout)
                return answer.images.compactMap { owned in
                    owned.image.map { OwnedImage(image: ImageRecord($0), ownerID: owned.ownerID) }
                }
            },
            posts: { ids in
                let content = YediContent.ContentService.Client(try peers.client(for: "content"))
                let answer = try await content.getPostPreviews(.init(postIDs: ids), options: timeout)
                return answer.previews.map {
                    PostPreview(
                        postID: $0.postID, designerID: $0.designerID, title: $0.title,
                        firstPhoto: $0.firstPhoto.map(ImageRecord.init))
                }
            },
            reservation: { id in
                let booking = YediBooking.BookingService.Client(try peers.client(for: "booking"))
                do {
                    let reservation = try await booking.getReservation(.init(reservationID: id), options: timeout)
                    return Reservation(
                        id: reservation.id, customerID: reservation.customerID, designerID: reservation.designerID,
                        startAtMilliseconds: reservation.startAtMs)
                } catch let error as RPCError where error.code == .notFound {
                    return nil
                }
            },
            profiles: { [users = UserDirectory.batchGetUsers(peers)] ids in
                try await users(ids).map {
                    Profile(
                        userID: $0.id, name: $0.name, profileImageID: $0.profileImageID,
                        isDesigner: $0.role == .designer)
                }
            },
            activeMatch: { id in
                let matching = YediSlp.Matching.Client(try peers.client(for: "account"))
                let answer = try await matching.getMatch(.init(matchID: id), options: timeout)
                return answer.found && answer.active ? (answer.memberA, answer.memberB) : nil
            })
    }

    /// Runs a check against a peer: its own clear refusals pass through as the peer's; anything else
    /// (unreachable, timeout) becomes UNAVAILABLE naming the peer, and nothing is stored.
    static func checking<T: Sendable>(_ peer: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as RPCError
            where error.code == .invalidArgument || error.code == .notFound || error.code == .permissionDenied
        {
            throw RPCError(code: .unavailable, message: "\(peer) refused the check (\(error.message)); try again later")
        } catch let error as RPCError {
            throw RPCError(
                code: .unavailable,
                message: "\(peer) could not be asked (\(error.code): \(error.message)); try again later")
        } catch {
            throw RPCError(code: .unavailable, message: "\(peer) could not be asked; try again later")
        }
    }
}

extension ImageRecord {
    init(_ ref: YediCommon.ImageRef) {
        self.init(id: ref.id, url: ref.url, width: ref.width, height: ref.height)
    }
}
