import CountLimitedCache
import Foundation
import GRDB
import OutsideSenders
import RPCCore
import ServiceRuntime
import YediProto

/// BookingService: designers' schedules and menus, free slots, reservations that never double-book, and
/// their payments (here rather than in a fifth process: a payment's hold and its reservation's slot change
/// in one transaction of one database; docs/payments.md).
enum BookingServiceDefinition: ServiceDefinition {
    static let defaults = ServiceDefaults(name: "booking", port: 7003, metricsPort: 9103, peers: ["account"])
    static let summary = "Yedi BookingService: schedules, free slots and reservations, over TLS."

    static func migrate(_ migrator: inout DatabaseMigrator) {
        BookingSchema.migrate(&migrator)
        PaymentSchema.migrate(&migrator)
        BookingSchema.migrateApps(&migrator)
        PromiseSchema.migrate(&migrator)
    }

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        let handlers = try handlers(env)
        // Confirmations an earlier process left unsettled (a crash between the provider's answer and
        // the commit) are reconciled now.
        if let store = handlers.payments.store as? SQLitePaymentStore {
            let leftovers = try await store.reconcileLeftovers(now: env.clock.nowMilliseconds)
            if leftovers > 0 { env.logger.notice("payments: reconciling \(leftovers) unsettled confirmations") }
        }
        return [handlers, promises(env, kit: handlers.kit)]
    }

    static func handlers(_ env: ServiceEnvironment) throws -> BookingHandlers {
        let peers = env.peers
        // Days of free slots, as many as the text caches hold (`--text-cache-items`).
        let freeDays = FreeDayCache(
            days: LRUCache(
                name: "booking-free-days", capacity: env.configuration.textCacheItems, metricsFactory: env.metrics),
            versions: LRUCache(
                name: "booking-free-day-versions", capacity: env.configuration.textCacheItems,
                metricsFactory: env.metrics))
        let outbox = env.outbox
        env.scheduler.handle(ReservationReminder.kind) { job, db in
            try ReservationReminder.run(job, outbox: outbox, db)
        }
        return BookingHandlers(
            store: FreeDayInvalidatingStore(
                inner: SQLiteBookingStore(
                    database: env.database, app: .yedi, outbox: env.outbox, scheduler: env.scheduler),
                cache: freeDays),
            freeDays: freeDays, kit: env.makeHandlerKit(), payments: try payments(env, freeDays: freeDays),
            shopHours: { designerID in
                let account = YediAccount.AccountService.Client(try peers.client(for: "account"))
                return try await account.getShopHours(
                    .init(designerID: designerID), options: CallOptions(timeout: .seconds(2)))
            })
    }

    /// The payment store and flow on this process's database, scheduler and outbox, with the provider the
    /// configuration chooses; registers the hold, reconciliation and outbox work they need.
    static func payments(_ env: ServiceEnvironment, freeDays: FreeDayCache) throws -> PaymentFlow {
        let store = SQLitePaymentStore(
            database: env.database, scheduler: env.scheduler, outbox: env.outbox,
            slotsFreed: { freeDays.invalidate($0) })
        let flow = PaymentFlow(
            store: store, provider: try PaymentProviderSetup.provider(for: env), clock: env.clock,
            logger: env.logger,
            killAfterConfirm: env.configuration.development
                && ProcessInfo.processInfo.environment["YEDI_PAYMENT_KILL_AFTER_CONFIRM"] == "1")
        env.outbox.register(PaymentWorker(flow: flow), destination: SQLitePaymentStore.workDestination)
        let settings = env.configuration.payments
        if let port = settings.webhookPort, let secret = settings.webhookSecret {
            env.addBackgroundService(
                PaymentWebhookServer(
                    host: settings.webhookHost, port: port, signature: WebhookSignature(secret: secret), store: store,
                    clock: env.clock, logger: env.logger))
        }
        let clock = env.clock
        env.scheduler.handle(SQLitePaymentStore.holdJobKind) { job, db in
            try store.releaseHold(reservationID: job.subject ?? "", now: clock.nowMilliseconds, db)
        }
        env.scheduler.handle(SQLitePaymentStore.reconcileJobKind) { job, db in
            try store.reconcile(paymentID: job.subject ?? "", db)
        }
        return flow
    }
}
