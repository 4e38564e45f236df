import Foundation
import Logging
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediCrypto
import YediProto

@testable import AccountService

/// Issue 24, abuse resistance: sign-in and sign-up are not an anonymous CPU lever, the throttle is
/// atomic, a stranger cannot lock an owner out, and DeleteAccount's password check is throttled too.
///
/// RPCClient cannot choose its source address, so tests that need several client addresses call the
/// handlers directly with a context naming the peer; the others go over TLS from loopback.
final class SignInAbuseTests: XCTestCase {
    /// A call's context as the server would make it for a connection from `address`:`port`.
    private static func context(
        _ method: MethodDescriptor, from address: String, port: Int = 40_000
    ) -> ServerContext {
        ServerContext(
            method: method, metadata: [:], deadline: nil,
            peer: PeerInfo(address: "[IPv4]\(address)/\(address):\(port)"), logger: Logger(label: "test"))
    }

    private static let signIn = YediAccount.AccountService.Method.signIn.descriptor

    /// SignUp and CompleteSignUp straight on `handlers`, from `address`, with the code from the mailbox.
    private static func signUp(
        _ request: YediAccount.SignUpRequest, with handlers: AccountHandlers, of fixture: AccountFixture,
        from address: String, port: Int = 40_000
    ) async throws -> YediAccount.CompleteSignUpResponse {
        let started = try await handlers.signUp(
            request, context: context(YediAccount.AccountService.Method.signUp.descriptor, from: address, port: port))
        let code = try await DevelopmentFileSender.code(
            forSignUp: started.verificationID,
            in: fixture.service.environment.dataDirectory.appendingPathComponent("sent-mail"), timeout: .seconds(20))
        return try await handlers.completeSignUp(
            .init(verificationID: started.verificationID, code: code),
            context: context(YediAccount.AccountService.Method.completeSignUp.descriptor, from: address, port: port))
    }

    // MARK: 1. The CPU lever

    /// A flood of 120 anonymous sign-ins from one address, at the production scrypt cost, is held to the
    /// address's allowance (the rest refused before any derivation), and a sign-in from another address
    /// made while the flood is in flight is answered. That the KDF queue serves the other address first is
    /// `KDFThreadPoolTests.testAnotherKeyGoesBeforeAFlood`; how long it waits is a figure for the bench
    /// (`account-bench`), not a timed assertion on a shared machine.
    func testAFloodFromOneAddressIsHeldToItsAllowanceAndAnotherAddressIsServed() async throws {
        let fixture = try await AccountFixture.start { options in
            options.signInRatePerAddress = "\(ServiceConfiguration.defaultSignInRatePerAddress)"
            options.signInRatePerConnection = "\(ServiceConfiguration.defaultSignInRatePerConnection)"
        }
        let handlers = try await AccountServiceDefinition.handlers(
            fixture.service.environment, passwords: PasswordHasher())
        _ = try await Self.signUp(SampleAccounts.customer(), with: handlers, of: fixture, from: "10.0.0.1")
        let legitimate = YediAccount.SignInRequest(email: "minji@example.com", password: "hair2024!")

        let flood = Task { await floodOfSignIns(handlers, from: "10.6.6.6", count: 120) }
        try await Task.sleep(for: .milliseconds(20))  // the flood has the KDF threads
        let answer = try await handlers.signIn(
            legitimate, context: Self.context(Self.signIn, from: "10.0.0.1", port: 41_000))
        XCTAssertNotNil(answer.session, "another address is served during the flood")
        let codes = await flood.value
        // Refused: past the allowance, or the KDF queue's share for one address full (both RESOURCE_EXHAUSTED);
        // checked (a wrong password): at most the allowance, plus what the bucket refilled meanwhile.
        let allowance = ServiceConfiguration.defaultSignInRatePerAddress.burst
        let refused = codes.filter { $0 == .resourceExhausted }.count
        let checked = codes.filter { $0 == .unauthenticated }.count
        XCTAssertGreaterThanOrEqual(refused, 120 - allowance, "the flood was refused: \(codes)")
        XCTAssertLessThanOrEqual(checked, allowance + 1, "no more derivations than the allowance: \(codes)")
        XCTAssertEqual(refused + checked, 120, "every call answered one way or the other: \(codes)")
        try await fixture.stop()
    }

    /// RefreshSession has its own allowance: a sign-in flood that spends an address's sign-in allowance
    /// leaves the refreshes of the users behind that address (a carrier's NAT) working.
    func testASignInFloodFromAnAddressLeavesItsRefreshesAlone() async throws {
        let fixture = try await AccountFixture.start { options in
            options.signInRatePerAddress = "3/60"
            options.signInRatePerConnection = "100/60"
        }
        let handlers = try await AccountServiceDefinition.handlers(
            fixture.service.environment, passwords: PasswordHasher(parameters: .fastForTests))
        let signedUp = try await Self.signUp(
            SampleAccounts.customer(), with: handlers, of: fixture, from: "100.64.0.1", port: 1)
        _ = await floodOfSignIns(handlers, from: "100.64.0.1", count: 10)
        let refused = await statusCode {
            _ = try await handlers.signIn(
                .init(email: "minji@example.com", password: "hair2024!"),
                context: Self.context(Self.signIn, from: "100.64.0.1", port: 2))
        }
        XCTAssertEqual(refused, .resourceExhausted, "the address's sign-in allowance is spent")
        let refreshed = try await handlers.refreshSession(
            .init(refreshToken: try XCTUnwrap(signedUp.session?.refreshToken)),
            context: Self.context(
                YediAccount.AccountService.Method.refreshSession.descriptor, from: "100.64.0.1", port: 3))
        XCTAssertNotNil(refreshed.session, "a refresh from the same address still works")
        try await fixture.stop()
    }

    /// Over TLS with the default limits: 120 sign-ins on one connection are refused at once past the
    /// connection's allowance, each with a `retry-after`, and another connection from the same address
    /// is still served.
    func testAFloodOverTLSIsRefusedQuicklyAndALegitimateCallIsServed() async throws {
        let fixture = try await AccountFixture.start { options in
            options.signInRatePerAddress = "\(ServiceConfiguration.defaultSignInRatePerAddress)"
            options.signInRatePerConnection = "\(ServiceConfiguration.defaultSignInRatePerConnection)"
        }
        let other = try RPCClient(
            configuration: fixture.harness.clientConfiguration(port: try await fixture.service.port))
        let otherTask = Task { await other.run() }
        _ = try await YediAccount.AccountService.Client(other).signUpCompletely(
            SampleAccounts.customer(), accountData: fixture.service.environment.dataDirectory)

        let start = ContinuousClock.now
        let errors = await withTaskGroup(of: RPCError?.self) { group in
            for index in 0..<120 {
                group.addTask {
                    await rpcError {
                        _ = try await fixture.account.signIn(
                            .init(email: "x\(index)@example.com", password: "guess\(index)a"))
                    }
                }
            }
            return await group.reduce(into: [RPCError?]()) { $0.append($1) }
        }
        let elapsed = ContinuousClock.now - start
        let refused = errors.filter { $0?.code == .resourceExhausted }
        // Past the connection's allowance; of the calls within it, some may find the KDF queue's share
        // for this address full, which is refused the same way.
        XCTAssertGreaterThanOrEqual(refused.count, 120 - ServiceConfiguration.defaultSignInRatePerConnection.burst)
        XCTAssertTrue(refused.allSatisfy { Int($0?.metadata["retry-after"] ?? "") ?? 0 >= 1 }, "\(refused.first!!)")
        XCTAssertLessThan(elapsed, .seconds(10), "refusals cost no hashing")

        let answer = try await YediAccount.AccountService.Client(other).signIn(
            .init(email: "minji@example.com", password: "hair2024!"))
        XCTAssertNotNil(answer.session, "another connection from the same address is served")
        other.beginGracefulShutdown()
        await otherTask.value
        try await fixture.stop()
    }

    // MARK: 2. The throttle is atomic

    /// 30 concurrent wrong passwords: at most `maximumFailures` get the normal answer and the account is
    /// locked afterwards (before, all 30 got "wrong password" and the account stayed open).
    func testConcurrentWrongPasswordsLockTheAccount() async throws {
        let fixture = try await AccountFixture.start()
        _ = try await fixture.signUp(SampleAccounts.customer())
        let codes = await withTaskGroup(of: StatusCode?.self) { group in
            for index in 0..<30 {
                group.addTask {
                    await statusCode {
                        _ = try await fixture.account.signIn(
                            .init(email: "minji@example.com", password: "guess\(index)x"))
                    }
                }
            }
            return await group.reduce(into: [StatusCode?]()) { $0.append($1) }
        }
        let maximum = SignInThrottle().maximumFailures
        XCTAssertLessThanOrEqual(codes.filter { $0 == .unauthenticated }.count, maximum, "\(codes)")
        XCTAssertEqual(codes.filter { $0 == .resourceExhausted }.count, 30 - maximum, "\(codes)")
        let right = await statusCode {
            _ = try await fixture.account.signIn(.init(email: "minji@example.com", password: "hair2024!"))
        }
        XCTAssertEqual(right, .resourceExhausted, "locked afterwards")
        try await fixture.stop()
    }

    // MARK: 3. Lockout is not a denial of service

    /// An attacker at another address locks only themselves out; the owner at their usual address signs
    /// in. A guess spread over many addresses slows new addresses, never the owner's.
    func testAStrangerCannotLockTheOwnerOut() async throws {
        let fixture = try await AccountFixture.start()
        let handlers = try await AccountServiceDefinition.handlers(
            fixture.service.environment, passwords: PasswordHasher(parameters: .fastForTests))
        _ = try await Self.signUp(SampleAccounts.customer(), with: handlers, of: fixture, from: "10.0.0.1")
        let right = YediAccount.SignInRequest(email: "minji@example.com", password: "hair2024!")
        let wrong = YediAccount.SignInRequest(email: "minji@example.com", password: "guess12345")
        // The owner signs in from their usual address.
        _ = try await handlers.signIn(right, context: Self.context(Self.signIn, from: "10.0.0.1"))

        for attempt in 0..<8 {
            let answer = await statusCode {
                _ = try await handlers.signIn(wrong, context: Self.context(Self.signIn, from: "10.6.6.6"))
            }
            XCTAssertEqual(answer, attempt < 5 ? .unauthenticated : .resourceExhausted, "attempt \(attempt)")
        }
        let attackerWithTheRightPassword = await statusCode {
            _ = try await handlers.signIn(right, context: Self.context(Self.signIn, from: "10.6.6.6"))
        }
        XCTAssertEqual(attackerWithTheRightPassword, .resourceExhausted, "the attacker's address is locked")
        let owner = try await handlers.signIn(right, context: Self.context(Self.signIn, from: "10.0.0.1"))
        XCTAssertNotNil(owner.session, "the owner is not")

        // Spread over 60 addresses: past the backstop, a new address gets one attempt per 30 s.
        for index in 0..<60 {
            _ = await statusCode {
                _ = try await handlers.signIn(wrong, context: Self.context(Self.signIn, from: "10.7.0.\(index)"))
            }
        }
        let newAddress = await rpcError {
            _ = try await handlers.signIn(right, context: Self.context(Self.signIn, from: "10.8.0.1"))
        }
        XCTAssertEqual(newAddress?.code, .resourceExhausted, "slowed")
        XCTAssertLessThanOrEqual(Int(newAddress?.metadata["retry-after"] ?? "") ?? 99, 30)
        let ownerAgain = try await handlers.signIn(right, context: Self.context(Self.signIn, from: "10.0.0.1"))
        XCTAssertNotNil(ownerAgain.session, "the owner's usual address is not slowed")
        fixture.clock.advance(by: 31)
        let later = try await handlers.signIn(right, context: Self.context(Self.signIn, from: "10.8.0.1"))
        XCTAssertNotNil(later.session, "slowed, not locked: the owner on a new device gets in")
        try await fixture.stop()
    }

    // MARK: 4. DeleteAccount's password check

    /// Wrong passwords on DeleteAccount count like wrong sign-ins: after five, even the right password
    /// waits out the lock (and sign-in from that address is locked too), until the lockout passes.
    func testDeleteAccountPasswordCheckIsThrottledLikeSignIn() async throws {
        let fixture = try await AccountFixture.start()
        let signedUp = try await fixture.signUp(SampleAccounts.customer())
        let token = try XCTUnwrap(signedUp.session?.accessToken)
        for _ in 0..<5 {
            let wrong = await statusCode {
                _ = try await fixture.account.deleteAccount(
                    .init(password: "guess12345"), options: fixture.options(token))
            }
            XCTAssertEqual(wrong, .permissionDenied)
        }
        let locked = await rpcError {
            _ = try await fixture.account.deleteAccount(.init(password: "hair2024!"), options: fixture.options(token))
        }
        XCTAssertEqual(locked?.code, .resourceExhausted)
        XCTAssertEqual(locked?.metadata["retry-after"], "900")
        let signIn = await statusCode {
            _ = try await fixture.account.signIn(.init(email: "minji@example.com", password: "hair2024!"))
        }
        XCTAssertEqual(signIn, .resourceExhausted, "one throttle for both password checks")
        fixture.clock.advance(by: 15 * 60 + 1)
        let refreshed = try await fixture.account.refreshSession(.init(refreshToken: signedUp.session!.refreshToken))
        _ = try await fixture.account.deleteAccount(
            .init(password: "hair2024!"), options: fixture.options(refreshed.session!.accessToken))
        let gone = await statusCode {
            _ = try await fixture.account.getMe(.init(), options: fixture.options(refreshed.session!.accessToken))
        }
        XCTAssertEqual(gone, .unauthenticated)
        try await fixture.stop()
    }
}

/// `count` concurrent sign-ins with wrong passwords for unknown emails from `address`, each on a
/// connection of its own; their status codes.
private func floodOfSignIns(_ handlers: AccountHandlers, from address: String, count: Int) async -> [StatusCode?] {
    await withTaskGroup(of: StatusCode?.self) { group in
        for index in 0..<count {
            let context = ServerContext(
                method: YediAccount.AccountService.Method.signIn.descriptor, metadata: [:], deadline: nil,
                peer: PeerInfo(address: "[IPv4]\(address)/\(address):\(20_000 + index)"), logger: Logger(label: "test"))
            group.addTask {
                await statusCode {
                    _ = try await handlers.signIn(
                        .init(email: "victim\(index)@example.com", password: "guess\(index)x1"), context: context)
                }
            }
        }
        return await group.reduce(into: [StatusCode?]()) { $0.append($1) }
    }
}
