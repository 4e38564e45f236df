import NIOCore

public struct TestTimeout: Error, CustomStringConvertible {
    public var description: String
}

extension EventLoopFuture where Value: Sendable {
    /// `wait()` with a deadline, so a broken test fails instead of hanging the suite.
    public func wait(timeout: TimeAmount, _ what: String = "future", file: StaticString = #filePath, line: UInt = #line)
        throws -> Value
    {
        let bounded = self.eventLoop.makePromise(of: Value.self)
        self.cascade(to: bounded)
        let seconds = Double(timeout.nanoseconds) / 1e9
        let timer = self.eventLoop.scheduleTask(in: timeout) {
            bounded.fail(TestTimeout(description: "\(what) did not complete within \(seconds) s (\(file):\(line))"))
        }
        defer { timer.cancel() }
        return try bounded.futureResult.wait()
    }
}
