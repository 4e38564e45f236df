import Foundation
import RPCCore

/// Polls `condition` until it holds or `timeout` seconds pass; returns whether it held.
public func eventually(timeout: TimeInterval, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = Date() + timeout
    while Date() < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}

/// The status code `body` fails with, or OK.
public func statusCode(_ body: () async throws -> Void) async -> StatusCode {
    do {
        try await body()
        return .ok
    } catch {
        return (error as? RPCError)?.code ?? .unknown
    }
}

/// The `RPCError` `body` fails with, or nil if it succeeded.
public func rpcError(_ body: () async throws -> Void) async -> RPCError? {
    do {
        try await body()
        return nil
    } catch {
        return error as? RPCError
    }
}
