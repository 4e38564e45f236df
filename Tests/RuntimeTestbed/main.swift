import ServiceRuntime

// A service process for the runtime's process-level tests (SIGKILL durability, outbox redelivery):
// `ServiceRunner.main` exactly as the real services run, with a test definition.
await ServiceRunner.main(TestbedDefinition.self)
