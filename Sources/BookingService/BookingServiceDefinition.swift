import CountLimitedCache
import GRDB
import RPCCore
import ServiceRuntime
import YediProto

/// BookingService: designers' schedules and menus, free slots, and reservations that never double-book.
enum BookingServiceDefinition: ServiceDefinition {
    static let defaults = ServiceDefaults(name: "booking", port: 7003, metricsPort: 9103, peers: ["account"])
    static let summary = "Yedi BookingService: schedules, free slots and reservations, over TLS."

    static func migrate(_ migrator: inout DatabaseMigrator) {
        BookingSchema.migrate(&migrator)
    }

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        [handlers(env)]
    }

    static func handlers(_ env: ServiceEnvironment) -> BookingHandlers {
        let peers = env.peers
        // Days of free slots, as many as the text caches hold (`--text-cache-items`).
        let freeDays = FreeDayCache(
            days: LRUCache(
                name: "booking-free-days", capacity: env.configuration.textCacheItems, metricsFactory: env.metrics),
            versions: LRUCache(
                name: "booking-free-day-versions", capacity: env.configuration.textCacheItems,
                metricsFactory: env.metrics))
        return BookingHandlers(
            store: FreeDayInvalidatingStore(inner: SQLiteBookingStore(database: env.database), cache: freeDays),
            freeDays: freeDays, kit: env.makeHandlerKit(),
            shopHours: { designerID in
                let account = YediAccount.AccountService.Client(try peers.client(for: "account"))
                return try await account.getShopHours(
                    .init(designerID: designerID), options: CallOptions(timeout: .seconds(2)))
            })
    }
}
