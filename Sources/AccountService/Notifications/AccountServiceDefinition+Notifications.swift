import OutsideSenders
import ServiceRuntime
import YediProto

/// How the AccountService process sets up devices and the inbox (docs/account.md, "Devices and the inbox").
extension AccountServiceDefinition {
    /// Devices and the inbox (docs/account.md, "Devices and the inbox"), on `kit` (the process's one kit).
    /// Forgets a device whose token the push provider said is dead, and prunes old notifications.
    static func notificationHandlers(_ env: ServiceEnvironment, kit: HandlerKit) -> NotificationHandlers {
        let store = notificationStore(env)
        let logger = env.logger
        env.outbox.onUndeliverable { job in
            guard job.destination == OutsideMessageKind.push.destination, job.error.isDeadDeviceToken,
                let push = try? YediRuntime.PushMessage(serializedBytes: job.payload)
            else { return }
            do {
                _ = try await store.forgetDeviceToken(push.deviceToken)
            } catch {
                logger.warning("could not forget a dead push token", metadata: ["error": "\(error)"])
            }
        }
        env.addBackgroundService(notificationPruning(env, store: store))
        return NotificationHandlers(store: store, kit: kit)
    }

    /// Deletes notifications older than `--retention notifications` (90 days), at start and hourly.
    static func notificationPruning(_ env: ServiceEnvironment, store: any NotificationStore) -> PeriodicJob {
        let clock = env.clock
        let retention = env.configuration.retention.notifications
        return PeriodicJob(name: "notification-pruning", period: pruningPeriod, logger: env.logger) {
            try await store.pruneNotifications(createdBefore: clock.nowMilliseconds - retention)
        }
    }
}
