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

    static let postgresMigrations: [PostgresMigration]? = BookingPostgresSchema.migrations

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        let handlers = try handlers(env)
        // Confirmations an earlier process left unsettled (a crash between the provider's answer and
        // the commit) are reconciled now.
        let leftovers = try await handlers.payments.store.reconcileLeftovers(now: env.clock.nowMilliseconds)
        if leftovers > 0 { env.logger.notice("payments: reconciling \(leftovers) unsettled confirmations") }
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
        let store: any BookingStore
        switch env.engine {
        case .sqlite(let database):
            env.scheduler.handle(ReservationReminder.kind) { job, db in
                try ReservationReminder.run(job, outbox: outbox, db)
            }
            store = SQLiteBookingStore(database: database, app: .yedi, outbox: outbox, scheduler: env.scheduler)
        case .postgres(let postgres):
            env.scheduler.handle(ReservationReminder.kind) { job, tx in
                try await ReservationReminder.run(job, outbox: outbox, tx)
            }
            store = PostgresBookingStore(postgres: postgres, app: .yedi, scheduler: env.scheduler, outbox: outbox)
        }
        return BookingHandlers(
            store: FreeDayInvalidatingStore(inner: store, cache: freeDays),
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
        let store = paymentStore(env, slotsFreed: { freeDays.invalidate($0) })
        let flow = PaymentFlow(
            store: store, provider: try PaymentProviderSetup.provider(for: env), clock: env.clock,
            logger: env.logger,
            killAfterConfirm: env.configuration.development
                && ProcessInfo.processInfo.environment["YEDI_PAYMENT_KILL_AFTER_CONFIRM"] == "1")
        env.outbox.register(PaymentWorker(flow: flow), destination: PaymentJobs.workDestination)
        let settings = env.configuration.payments
        if let port = settings.webhookPort, let secret = settings.webhookSecret {
            env.addBackgroundService(
                PaymentWebhookServer(
                    host: settings.webhookHost, port: port, signature: WebhookSignature(secret: secret), store: store,
                    clock: env.clock, logger: env.logger))
        }
        return flow
    }

    /// The payment store on the engine in use, with its hold and reconciliation jobs registered on the
    /// scheduler (they run inside the scheduler's transaction, so they take that engine's).
    static func paymentStore(_ env: ServiceEnvironment, slotsFreed: @escaping @Sendable (String) -> Void)
        -> any PaymentStore
    {
        let clock = env.clock
        switch env.engine {
        case .sqlite(let database):
            let store = SQLitePaymentStore(
                database: database, scheduler: env.scheduler, outbox: env.outbox, slotsFreed: slotsFreed)
            env.scheduler.handle(PaymentJobs.holdKind) { job, db in
                try store.releaseHold(reservationID: job.subject ?? "", now: clock.nowMilliseconds, db)
            }
            env.scheduler.handle(PaymentJobs.reconcileKind) { job, db in
                try store.reconcile(paymentID: job.subject ?? "", db)
            }
            return store
        case .postgres(let postgres):
            let store = PostgresPaymentStore(
                postgres: postgres, scheduler: env.scheduler, outbox: env.outbox, slotsFreed: slotsFreed)
            env.scheduler.handle(PaymentJobs.holdKind) { job, tx in
                try await store.releaseHold(reservationID: job.subject ?? "", now: clock.nowMilliseconds, tx)
            }
            env.scheduler.handle(PaymentJobs.reconcileKind) { job, tx in
                try await store.reconcile(paymentID: job.subject ?? "", tx)
            }
            return store
        }
    }
}
