import XCTest

@testable import RPCCore
