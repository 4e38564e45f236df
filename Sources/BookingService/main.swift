import ServiceRuntime

await ServiceRunner.main(BookingServiceDefinition.self)
