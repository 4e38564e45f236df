import ServiceRuntime

await ServiceRunner.main(ChatServiceDefinition.self)
