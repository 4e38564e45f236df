import ServiceRuntime

await ServiceRunner.main(ContentServiceDefinition.self)
