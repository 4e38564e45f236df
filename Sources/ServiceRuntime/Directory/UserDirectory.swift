import CountLimitedCache
import Logging
import Metrics
import NIOConcurrencyHelpers
import RPCCore
import YediProto

/// Users' public fields (id, role, name, profile image id) as the services that show them next to their
/// own data see them (ContentService's post authors, ChatService's room members): one
/// `AccountService/BatchGetUsers` call per 100 ids not cached, and one cache policy for every service.
///
/// - **Cache**: a count-limited LRU (`--text-cache-items` entries, `cache="user-directory"` on
///   `/metrics`). Unknown ids (an account deleted, its purge pending) are cached too, so they are not asked
///   for on every page.
/// - **Invalidation**: AccountService sends `yedi.runtime.Users/UserChanged` through its outbox when a
///   public field changes, and `Revocations/RevokeUser` when an account is deleted; either drops the
///   user's entry here (`forget`), so a new name shows on the next read.
/// - **Lifetime**: an entry counts for `lifetime` (60 s, by the injected clock), a safety net behind the
///   events. A lookup that was out when a user was forgotten is answered but not cached (`forgets`).
/// - **AccountService down**: the ids it could not answer are left out of the answer (callers show empty
///   names) and a warning is logged; the page is this service's own data and is not refused for want of
///   names. Expired entries are not served instead: a name may have changed, and an empty one says so.
///
/// Concurrent misses of the same ids are not coalesced (neither directory this replaced did): each call
/// makes its own lookup, at most one per 100 missing ids. The answers do not depend on the caller
/// (BatchGetUsers returns only public fields, to services), so one cache serves every user's calls; the
/// lookup runs within the served call, inheriting its deadline and on-behalf-of user (`ServicePeers`).
public final class UserDirectory: Sendable {
    /// The public users among `ids` (at most 100) that exist: AccountService's `BatchGetUsers`.
    public typealias Lookup = @Sendable ([String]) async throws -> [YediAccount.PublicUser]

    private struct Entry: Sendable {
        /// Nil: AccountService does not know the id.
        var user: YediAccount.PublicUser?
        var expiresAtMilliseconds: Int64
    }

    /// The most ids one `BatchGetUsers` call takes.
    public static let batchSize = 100
    public static let defaultLifetimeMilliseconds: Int64 = 60_000

    private let cache: LRUCache<String, Entry>
    private let clock: any WallClock
    private let lookup: Lookup
    public let lifetimeMilliseconds: Int64
    /// Counts `forget`s: a lookup that began before one may carry the old fields, so its answer is not
    /// cached (`put` compares it under this lock, and `forget` removes under it).
    private let forgets = NIOLockedValueBox<UInt64>(0)

    /// A directory of its own, told of no changes (tests); a service makes its one with `init(_:lookup:)`.
    public init(
        capacity: Int, clock: any WallClock,
        lifetimeMilliseconds: Int64 = UserDirectory.defaultLifetimeMilliseconds,
        metricsFactory: any MetricsFactory = MetricsSystem.factory, lookup: @escaping Lookup
    ) {
        self.cache = LRUCache(name: "user-directory", capacity: capacity, metricsFactory: metricsFactory)
        self.clock = clock
        self.lookup = lookup
        self.lifetimeMilliseconds = lifetimeMilliseconds
    }

    /// The process's directory: cached per `env`'s configuration and clock, forgetting users when
    /// AccountService says they changed or were revoked here. Make one per process (the service's
    /// definition does); `lookup` replaces the call to AccountService (tests count the calls).
    public convenience init(_ env: ServiceEnvironment, lookup: Lookup? = nil) {
        self.init(
            capacity: env.configuration.textCacheItems, clock: env.clock, metricsFactory: env.metrics,
            lookup: lookup ?? Self.batchGetUsers(env.peers))
        env.onUserChanged { [weak self] in self?.forget($0) }
        env.onUserRevoked { [weak self] in self?.forget($0) }
    }

    /// The users among `ids` that are known; ids AccountService does not know, or could not be asked
    /// about, are left out.
    public func users(_ ids: [String], logger: Logger) async -> [String: YediAccount.PublicUser] {
        let now = clock.nowMilliseconds
        var found: [String: YediAccount.PublicUser] = [:]
        var missing: [String] = []
        for id in Set(ids) {
            if let entry = cache.get(id), entry.expiresAtMilliseconds > now {
                if let user = entry.user { found[id] = user }
            } else {
                missing.append(id)
            }
        }
        missing.sort()
        var start = 0
        while start < missing.count {
            let batch = Array(missing[start..<min(start + Self.batchSize, missing.count)])
            start += Self.batchSize
            let forgetsBefore = forgets.withLockedValue { $0 }
            let answer: [YediAccount.PublicUser]
            do {
                answer = try await lookup(batch)
            } catch {
                logger.warning(
                    "users' names unavailable from AccountService; answering without them",
                    metadata: ["error": "\(error)", "users": "\(batch.count)"])
                continue
            }
            var byID: [String: YediAccount.PublicUser] = [:]
            for user in answer { byID[user.id] = user }
            for id in batch {
                if let user = byID[id] { found[id] = user }
            }
            put(batch, byID, expiresAt: now + lifetimeMilliseconds, unlessForgottenSince: forgetsBefore)
        }
        return found
    }

    /// Drops `userID`'s entry: the next read asks AccountService.
    public func forget(_ userID: String) {
        forgets.withLockedValue { count in
            count &+= 1
            cache.remove(userID)
        }
    }

    private func put(
        _ batch: [String], _ byID: [String: YediAccount.PublicUser], expiresAt: Int64,
        unlessForgottenSince forgetsBefore: UInt64
    ) {
        forgets.withLockedValue { count in
            guard count == forgetsBefore else { return }
            for id in batch {
                cache.put(Entry(user: byID[id], expiresAtMilliseconds: expiresAt), forKey: id)
            }
        }
    }

    /// `BatchGetUsers` on `peers`' AccountService (SERVICE access: this process's certificate), 2 s at most.
    public static func batchGetUsers(_ peers: ServicePeers) -> Lookup {
        { ids in
            let account = YediAccount.AccountService.Client(try peers.client(for: "account"))
            return try await account.batchGetUsers(.init(userIDs: ids), options: CallOptions(timeout: .seconds(2)))
                .users
        }
    }
}
