import RPCCore
import ServiceRuntime
import XCTest

/// The token-bucket limiter on a clock the test moves, its bounded table, and client address keys.
final class RateLimiterTests: XCTestCase {
    func testABurstThenOneTokenPerIntervalWithARetryAfter() {
        var limiter = RateLimiter<String>(limit: RateLimit(burst: 3, period: .seconds(60)))
        for _ in 0..<3 { XCTAssertEqual(limiter.take("a", now: 100), .allowed) }
        let refused = limiter.take("a", now: 100)
        XCTAssertEqual(refused.retryAfter, 20, "one token comes back every 20 s")
        XCTAssertEqual(limiter.take("b", now: 100), .allowed, "another key has its own bucket")
        XCTAssertEqual(limiter.take("a", now: 115).retryAfter, 5)
        XCTAssertEqual(limiter.take("a", now: 120), .allowed)
        XCTAssertNotNil(limiter.take("a", now: 120).retryAfter)
        XCTAssertNotNil(limiter.take("a", now: 50).retryAfter, "a clock stepping back refills nothing")
        XCTAssertEqual(limiter.take("a", now: 10_000), .allowed, "a long quiet time refills to the burst only")
        XCTAssertEqual(limiter.take("a", now: 10_000), .allowed)
        XCTAssertEqual(limiter.take("a", now: 10_000), .allowed)
        XCTAssertNotNil(limiter.take("a", now: 10_000).retryAfter)
    }

    func testTheTableIsBoundedAndForgetsTheLeastRecentlyUsedKey() {
        var limiter = RateLimiter<String>(limit: RateLimit(burst: 1, period: .seconds(60)), maximumKeys: 3)
        for key in ["a", "b", "c"] { XCTAssertEqual(limiter.take(key, now: 0), .allowed) }
        XCTAssertNotNil(limiter.take("a", now: 0).retryAfter, "a is now the most recently used")
        XCTAssertEqual(limiter.take("d", now: 0), .allowed)
        XCTAssertEqual(limiter.count, 3)
        XCTAssertNotNil(limiter.take("a", now: 0).retryAfter, "a was kept")
        XCTAssertEqual(limiter.take("b", now: 0), .allowed, "b, the least recently used, was forgotten")
        for index in 0..<10_000 { _ = limiter.take("k\(index)", now: 1) }
        XCTAssertEqual(limiter.count, 3, "a million keys or ten thousand: the table stays at its bound")
    }

    func testRateLimitText() {
        XCTAssertEqual(RateLimit(parsing: "20/60"), RateLimit(burst: 20, period: .seconds(60)))
        XCTAssertEqual(RateLimit(parsing: "20/60")?.description, "20/60")
        for bad in ["", "20", "0/60", "20/0", "-1/60", "a/b", "20/60/1", "1/100000", "9999999999999999999999/1"] {
            XCTAssertNil(RateLimit(parsing: bad), bad)
        }
    }

    func testTheClientAddressKeyDropsThePortAndGroupsIPv6ByItsSlash64() {
        XCTAssertEqual(ClientAddress.key(of: "[IPv4]127.0.0.1/127.0.0.1:53412"), "127.0.0.1")
        XCTAssertEqual(ClientAddress.key(of: "[IPv4]10.1.2.3:4000"), "10.1.2.3")
        XCTAssertEqual(ClientAddress.key(of: "[IPv6]::1/::1:53412"), "0:0:0:0::/64")
        XCTAssertEqual(
            ClientAddress.key(of: "[IPv6]2001:db8:aa:bb:1:2:3:4/2001:db8:aa:bb:1:2:3:4:443"),
            ClientAddress.key(of: "[IPv6]2001:db8:aa:bb:ffff::9/2001:db8:aa:bb:ffff::9:443"))
        XCTAssertEqual(ClientAddress.key(of: "[IPv6]2001:db8:aa:bb:1:2:3:4:443"), "2001:db8:aa:bb::/64")
        XCTAssertEqual(ClientAddress.key(of: "[IPv6]::ffff:192.0.2.7/::ffff:192.0.2.7:80"), "192.0.2.7")
        for odd in ["unknown", "", "[IPv6]", "[IPv4]:", "[IPv6]zz::1:1", "[UNIX]/tmp/socket", "[IPv6]:::::::::::1:2"] {
            XCTAssertEqual(ClientAddress.key(of: odd).isEmpty, odd.isEmpty, "odd text is a key of its own: \(odd)")
        }
    }

    func testClientRateLimitsRefuseWithRetryAfterPerConnectionThenPerAddress() {
        let limits = ClientRateLimits(
            perAddress: RateLimit(burst: 3, period: .seconds(60)),
            perConnection: RateLimit(burst: 2, period: .seconds(60)))
        let first = PeerInfo(address: "[IPv4]10.0.0.1/10.0.0.1:1000")
        let second = PeerInfo(address: "[IPv4]10.0.0.1/10.0.0.1:1001")
        XCTAssertEqual(try limits.admit(first, now: 0), "10.0.0.1")
        XCTAssertNoThrow(try limits.admit(first, now: 0))
        XCTAssertThrowsError(try limits.admit(first, now: 0)) { error in
            let error = error as? RPCError
            XCTAssertEqual(error?.code, .resourceExhausted)
            XCTAssertEqual(error?.metadata["retry-after"], "30")
            XCTAssertTrue(error?.message.contains("this connection") ?? false, error?.message ?? "")
        }
        XCTAssertNoThrow(try limits.admit(second, now: 0), "the refused call spent nothing of the address")
        XCTAssertThrowsError(try limits.admit(second, now: 0)) { error in
            XCTAssertTrue((error as? RPCError)?.message.contains("your address") ?? false, "\(error)")
        }
        XCTAssertNoThrow(try limits.admit(PeerInfo(address: "[IPv4]10.0.0.2/10.0.0.2:1000"), now: 0))
    }
}
