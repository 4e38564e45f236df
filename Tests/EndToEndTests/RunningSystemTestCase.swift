import XCTest

/// A test of the whole system: the four real processes are started before each test (`YediSystem`) and
/// stopped after it, so each test begins on empty data.
class RunningSystemTestCase: XCTestCase {
    var system: YediSystem!

    /// The engine and replicas the system runs with.
    class var engine: YediSystem.Engine { .sqlite }

    override func setUpWithError() throws {
        system = try YediSystem(engine: Self.engine)
        try system.startAll()
    }

    override func tearDownWithError() throws {
        system?.stopAll()
        system = nil
    }
}
