import NIOPosix
import RPCTLS
import RPCTestSupport
import XCTest

/// A test case with the test PKI and its own event loops, for TLS tests over loopback sockets.
class TLSLoopbackTestCase: XCTestCase {
    var group: MultiThreadedEventLoopGroup!
    var pki: TestPKI!

    override func setUpWithError() throws {
        self.pki = try TestPKI.get()
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
    }

    override func tearDownWithError() throws {
        try self.group.syncShutdownGracefully()
    }
}
