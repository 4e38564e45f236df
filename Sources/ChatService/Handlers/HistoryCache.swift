import CountLimitedCache
import RPCCore
import Synchronization
import YediSync

/// Recent history pages of busy rooms, in RPCCore's count-limited LRU cache (one entry per room holding
/// its cached pages), plus the rooms themselves for membership checks.
///
/// Coherence: every write that changes a room's pages (a message, a read cursor moving, a purge) calls
/// `invalidate(room)` after it committed. A reader that filled a page from the database stores it only if
/// no invalidation of that room happened since it began (a generation counter per stripe of rooms),
/// so a page read before a write can never be cached after it.
///
/// That holds for one process's writes only. On PostgreSQL another replica writes too, and its
/// notification would arrive after its answer, so the service there runs with the cache off
/// (`enabled: false`: every lookup misses, nothing is kept) and reads each page and room from the database.
final class HistoryCache: Sendable {
    struct PageKey: Hashable, Sendable {
        var beforeSeq: Int64
        var limit: Int
    }

    private struct RoomPages: Sendable {
        var pages: [PageKey: MessagePage] = [:]
    }

    /// Pages kept per room; older up-scroll pages beyond this replace the others.
    static let pagesPerRoom = 8
    private static let stripes = 1_024

    private let pages: LRUCache<String, RoomPages>
    private let rooms: LRUCache<String, RoomRecord>
    private let generations = TSanVisibleMutex([UInt64](repeating: 0, count: HistoryCache.stripes))
    /// False: nothing is kept (several replicas write the rooms).
    let enabled: Bool

    init(roomCapacity: Int = 2_000, enabled: Bool = true) {
        self.enabled = enabled
        pages = LRUCache(name: "chat_history_pages", capacity: roomCapacity)
        rooms = LRUCache(name: "chat_rooms", capacity: roomCapacity * 4)
    }

    func room(_ id: String) -> RoomRecord? { enabled ? rooms.get(id) : nil }

    func remember(_ room: RoomRecord) {
        if enabled { rooms.put(room, forKey: room.id) }
    }

    func page(room: String, key: PageKey) -> MessagePage? { enabled ? pages.get(room)?.pages[key] : nil }

    /// A token to pass to `store` once the page has been read from the database.
    func generation(of room: String) -> UInt64 {
        generations.withLock { $0[Self.stripe(room)] }
    }

    func store(_ page: MessagePage, room: String, key: PageKey, generation: UInt64) {
        guard enabled else { return }
        generations.withLock { generations in
            guard generations[Self.stripe(room)] == generation else { return }
            var entry = pages.get(room) ?? RoomPages()
            if entry.pages.count >= Self.pagesPerRoom { entry.pages.removeAll() }
            entry.pages[key] = page
            pages.put(entry, forKey: room)
        }
    }

    /// Drops the room's pages (and, when `roomRemoved`, the room).
    func invalidate(room: String, roomRemoved: Bool = false) {
        generations.withLock { generations in
            generations[Self.stripe(room)] &+= 1
            _ = pages.remove(room)
        }
        if roomRemoved { _ = rooms.remove(room) }
    }

    var statistics: LRUCacheStatistics { pages.statistics }

    private static func stripe(_ room: String) -> Int {
        var hasher = Hasher()
        hasher.combine(room)
        return Int(UInt(bitPattern: hasher.finalize()) % UInt(stripes))
    }
}
