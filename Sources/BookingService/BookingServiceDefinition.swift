import GRDB
import RPCCore
import ServiceRuntime
import YediProto

/// BookingService: schedules, free slots and reservations.
///
/// Only PurgeUser (account deletion) is served so far; the rest comes with the BookingService issue and
/// answers UNIMPLEMENTED until then.
enum BookingServiceDefinition: ServiceDefinition {
    static let defaults = ServiceDefaults(name: "booking", port: 7003, metricsPort: 9103, peers: ["account"])
    static let summary = "Yedi BookingService: schedules, free slots and reservations, over TLS."
    static let placeholders = [YediBooking.BookingService.descriptor]

    static func migrate(_ migrator: inout DatabaseMigrator) {}

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        [
            PurgeUserReceiver.methods(
                of: YediBooking.BookingService.descriptor, method: YediBooking.BookingService.Method.purgeUser,
                environment: env)
        ]
    }
}
