import ArgumentParser
import RPCCore
import ServiceRuntime
import YediProto

/// The BookingService process.
///
/// Its RPCs are published (proto/booking.proto) and answer UNIMPLEMENTED until their handlers land.
@main
struct BookingServiceMain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "BookingService",
        abstract: "Yedi BookingService: serves yedi.booking.BookingService over TLS."
    )

    @OptionGroup var options: ServiceOptions

    func run() async throws {
        try await ServiceRunner(name: "booking", options: options).run(
            services: [],
            placeholders: [YediBooking.BookingService.descriptor],
            verifier: nil
        )
    }
}
