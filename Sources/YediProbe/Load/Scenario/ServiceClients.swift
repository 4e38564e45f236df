import Foundation
import ProtoBridge
import ProtoJSON
import RPCCore

/// One client per service, and JSON calls through them: what a scenario needs to sign users up and to
/// make its mix of calls with the probe's own machinery (the schema catalog and proto3 JSON).
struct ServiceClients: Sendable {
    let clients: [String: RPCClient]
    let timeout: Duration?

    /// Makes the clients, runs `body` with them, then closes them.
    static func with<Result: Sendable>(
        _ configurations: [String: ClientConfiguration],
        timeout: Duration?,
        _ body: (ServiceClients) async throws -> Result
    ) async throws -> Result {
        var clients: [String: RPCClient] = [:]
        for (service, configuration) in configurations {
            clients[service] = try RPCClient(configuration: configuration)
        }
        let all = Array(clients.values)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            for client in all { group.addTask { await client.run() } }
            do {
                let result = try await body(ServiceClients(clients: clients, timeout: timeout))
                for client in all { client.beginGracefulShutdown() }
                try await group.waitForAll()
                return result
            } catch {
                for client in all { client.beginGracefulShutdown() }
                try? await group.waitForAll()
                throw error
            }
        }
    }

    /// Waits until every service has a connection; a service that cannot be reached exits 3 or 4.
    func waitUntilReady(timeout: Duration) async throws(ProbeError) {
        for (service, client) in clients.sorted(by: { $0.key < $1.key }) {
            do {
                try await client.waitUntilReady(timeout: timeout)
            } catch {
                var failure = ProbeError(connecting: error)
                failure.message = "\(service): \(failure.message)"
                throw failure
            }
        }
    }

    /// Calls `method` on `service` with a JSON request; the reply, or the call's `RPCError`.
    func call(_ service: String, _ method: ProbeMethod, _ json: String, token: String?) async throws -> DynamicMessage {
        guard let client = clients[service], let descriptor = method.descriptor else {
            throw RPCError(
                code: .internalError, message: "no client for \(service) or no descriptor for \(method.fullName)")
        }
        let payload: [UInt8]
        do {
            payload = try ProtoJSONDecoder().decode(json, as: method.input).serializedBytes()
        } catch {
            throw RPCError(code: .internalError, message: "the scenario's request does not fit: \(error)")
        }
        var metadata = Metadata()
        if let token { metadata["authorization"] = "Bearer \(token)" }
        let reply = try await client.unary(
            descriptor, payload: payload, options: CallOptions(timeout: timeout, metadata: metadata))
        do {
            return try DynamicMessage(schema: method.output, serializedBytes: reply.payload)
        } catch {
            throw RPCError(code: .internalError, message: "the response could not be decoded: \(error)")
        }
    }
}
