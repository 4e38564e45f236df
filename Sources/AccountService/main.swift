import ServiceRuntime

await ServiceRunner.main(AccountServiceDefinition.self)
