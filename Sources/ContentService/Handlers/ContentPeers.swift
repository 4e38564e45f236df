import Logging
import RPCCore
import ServiceRuntime
import YediProto

/// What ContentService asks its peers, as closures so tests can count or replace the calls.
struct ContentPeers: Sendable {
    /// Public profiles (name, profile image) of `ids` from AccountService's `BatchGetUsers`, one call.
    var users: @Sendable ([String]) async throws -> [YediAccount.PublicUser]
    /// The designers `userID` follows (AccountService's `ListFollowedDesignerIds`).
    var followedDesignerIDs: @Sendable (String) async throws -> [String]
    /// BookingService's `GetReservation`; nil when Booking says there is no such reservation.
    var reservation: @Sendable (String) async throws -> YediBooking.Reservation?

    static func live(_ peers: ServicePeers) -> ContentPeers {
        let timeout = CallOptions(timeout: .seconds(2))
        return ContentPeers(
            users: { ids in
                let account = YediAccount.AccountService.Client(try peers.client(for: "account"))
                return try await account.batchGetUsers(.init(userIDs: ids), options: timeout).users
            },
            followedDesignerIDs: { userID in
                let account = YediAccount.AccountService.Client(try peers.client(for: "account"))
                return try await account.listFollowedDesignerIDs(.init(userID: userID), options: timeout).designerIDs
            },
            reservation: { id in
                let booking = YediBooking.BookingService.Client(try peers.client(for: "booking"))
                do {
                    return try await booking.getReservation(.init(reservationID: id), options: timeout)
                } catch let error as RPCError where error.code == .notFound {
                    return nil
                }
            })
    }
}

/// Post authors' names and profile images: one batched AccountService lookup per page for the authors not
/// cached, kept for a short while (`lifetime`) in a count-limited LRU cache (`content-authors` on `/metrics`)
/// so a renamed designer shows the new name soon.
///
/// When AccountService does not answer, the page is served without author fields (name "") rather than
/// refused: the posts themselves are this service's own data. Unknown ids (accounts deleted, purge pending)
/// are cached as empty authors too.
final class AuthorDirectory: Sendable {
    struct Entry: Sendable {
        var author: YediContent.PostAuthor
        var expiresAtMilliseconds: Int64
    }

    let cache: LRUCache<String, Entry>
    let clock: any WallClock
    let lookup: @Sendable ([String]) async throws -> [YediAccount.PublicUser]
    let lifetimeMilliseconds: Int64

    init(
        cache: LRUCache<String, Entry>, clock: any WallClock,
        lookup: @escaping @Sendable ([String]) async throws -> [YediAccount.PublicUser],
        lifetimeMilliseconds: Int64 = 30_000
    ) {
        self.cache = cache
        self.clock = clock
        self.lookup = lookup
        self.lifetimeMilliseconds = lifetimeMilliseconds
    }

    func authors(_ ids: [String], logger: Logger) async -> [String: YediContent.PostAuthor] {
        let now = clock.nowMilliseconds
        var found: [String: YediContent.PostAuthor] = [:]
        var missing: [String] = []
        for id in Set(ids) {
            if let entry = cache.get(id), entry.expiresAtMilliseconds > now {
                found[id] = entry.author
            } else {
                missing.append(id)
            }
        }
        guard !missing.isEmpty else { return found }
        do {
            let users = try await lookup(missing.sorted())
            var fetched: [String: YediContent.PostAuthor] = [:]
            for user in users {
                fetched[user.id] = YediContent.PostAuthor(name: user.name, profileImageID: user.profileImageID)
            }
            for id in missing {
                let author = fetched[id] ?? YediContent.PostAuthor()
                cache.put(Entry(author: author, expiresAtMilliseconds: now + lifetimeMilliseconds), forKey: id)
                found[id] = author
            }
        } catch {
            logger.warning("post authors unavailable; serving the page without them", metadata: ["error": "\(error)"])
        }
        return found
    }

    func forget(_ id: String) {
        cache.remove(id)
    }
}
