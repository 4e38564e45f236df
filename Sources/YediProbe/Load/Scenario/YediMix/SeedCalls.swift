import Foundation
import ProtoBridge
import ProtoJSON
import RPCCore

extension Seeder {
    /// A seeding call: its failure ends the run, saying which step failed. AccountService limits
    /// sign-ups per address and per connection (`--sign-in-rate-per-address`, 20 a minute by default):
    /// when it says so, the call waits the `retry-after` it gives and is made again, for up to 3 minutes.
    func seedCall(
        _ clients: ServiceClients, _ service: String, _ method: String, _ json: String, token: String?
    ) async throws -> DynamicMessage {
        let giveUp = ContinuousClock.now + .seconds(180)
        while true {
            do {
                return try await clients.call(service, methods[method]!, json, token: token)
            } catch let error as RPCError
                where error.code == .resourceExhausted && service == "account" && ContinuousClock.now < giveUp
            {
                let seconds = error.metadata["retry-after"].flatMap { Int($0) } ?? 5
                if warned.withLockedValue({ warned in
                    defer { warned = true }
                    return !warned
                }) {
                    Output.errorLine(
                        "yedi-mix: \(service) limits sign-ups (\(oneLine(error.message))): waiting as it asks. "
                            + "For larger casts start it with higher --sign-in-rate-per-address and "
                            + "--sign-in-rate-per-connection")
                }
                try await Task.sleep(for: .seconds(min(max(seconds, 1), 60)))
            } catch let error as RPCError {
                var failure = ProbeError.rpc(error)
                failure.message = "yedi-mix could not seed: \(method): \(failure.message)"
                throw failure
            }
        }
    }

    func field(_ path: [String], of reply: DynamicMessage) throws(ProbeError) -> String {
        try ReplyPrinter.extract(path, from: reply)
    }

    /// The reply as a JSON object (proto3 JSON: 64-bit integers are strings).
    func jsonObject(of reply: DynamicMessage) throws -> [String: Any] {
        let json = try ProtoJSONEncoder(style: .compact, emitDefaults: false).encode(reply)
        return (try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]) ?? [:]
    }

    /// Runs `body` for each index, four at a time; results in index order.
    func inBatches<T: Sendable>(
        _ indices: Range<Int>, _ body: @escaping @Sendable (Int) async throws -> T
    ) async throws -> [T] {
        var results: [Int: T] = [:]
        var next = indices.lowerBound
        try await withThrowingTaskGroup(of: (Int, T).self) { group in
            for _ in 0..<4 where next < indices.upperBound {
                let index = next
                group.addTask { (index, try await body(index)) }
                next += 1
            }
            while let (index, result) = try await group.next() {
                results[index] = result
                if next < indices.upperBound {
                    let index = next
                    group.addTask { (index, try await body(index)) }
                    next += 1
                }
            }
        }
        return indices.map { results[$0]! }
    }

    /// A mobile number per user: 010 and eight digits.
    static func phone(_ index: Int) -> String {
        "010" + String(format: "%08d", (Int.random(in: 0..<90_000) * 1000 + index) % 100_000_000)
    }
}
