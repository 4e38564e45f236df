import BenchSupport
import Foundation
import RPCCore
import ServiceRuntime
import Synchronization
import YediProto

/// `--failover`: an AccountService replica's death under sign-ins, as issue 31 asks it measured (the
/// chat and booking benches do the same for their services; all run on `FailoverRun`).
///
/// `failover-clients` customers are signed up through replica 0 alone (its development mailbox holds
/// their codes), then the other replicas start. Each customer signs in again and again through a client
/// spread over every replica; every sign-in stores a session. Replica 0 gets SIGKILL after a phase and is
/// restarted after another. Then every acknowledged session's refresh token is exchanged: one that is
/// refused was acknowledged and not stored (lost).
///
/// Sign-ins are bound by the production password hash (scrypt, tens of milliseconds of CPU each), so
/// there are few of them: the figures are about who notices the kill, not throughput.
extension AccountBench {
    func measureFailover(
        in work: URL, pki: String, executable: String, arguments: [String]
    ) async throws {
        let startReplica = ServiceProcess.replicaStarter(
            executable, name: "AccountService", pki: pki, work: work, arguments: arguments)
        let processes = ProcessList()
        defer { processes.stopAll() }
        processes.append(try await startReplica(0, nil, ""))
        let password = "bench-password-1"
        let emails = (0..<failoverClients).map { "bench-failover-\($0)@example.com" }
        try await withRPCClient(configuration: processes[0].clientConfiguration()) { client in
            let account = YediAccount.AccountService.Client(client)
            for email in emails {
                _ = try await account.signUpCompletely(
                    .init(
                        email: email, password: password, name: "벤치 고객", phone: "01012345678", gender: .female,
                        birthDate: .init(year: 1995, month: 4, day: 12), role: .customer),
                    accountData: URL(fileURLWithPath: processes[0].data), options: CallOptions(timeout: .seconds(30)))
            }
        }
        for replica in 1..<replicas { processes.append(try await startReplica(replica, nil, "")) }

        let client = try RPCClient(configuration: ServiceProcess.clientConfiguration(spreadingOver: processes.all))
        let clientTask = Task { await client.run() }
        defer { client.beginGracefulShutdown() }
        let account = YediAccount.AccountService.Client(client)
        let workers = FailoverWorkers(count: emails.count)
        let sessions = SessionLedger()
        let restart = { (port: Int) in try await startReplica(0, port, "-restarted") }
        let run = try await FailoverRun.measure(
            processes: processes, restart: restart, phase: failoverOptions.phase, workers: workers
        ) {
            await withTaskGroup(of: Void.self) { group in
                for (worker, email) in emails.enumerated() {
                    group.addTask {
                        while !workers.isStopped {
                            do {
                                let answer = try await account.signIn(
                                    .init(email: email, password: password),
                                    options: CallOptions(timeout: .seconds(30)))
                                workers.succeeded(worker)
                                sessions.acknowledged(answer.session?.refreshToken ?? "")
                            } catch {
                                workers.failed(worker, error)
                                try? await Task.sleep(for: .milliseconds(20))
                            }
                        }
                    }
                }
            }
        }

        // Every acknowledged session is in the database: its refresh token is exchanged once.
        let acknowledged = sessions.all
        var (lost, unchecked) = (0, 0)
        for refreshToken in acknowledged {
            do {
                _ = try await account.refreshSession(
                    .init(refreshToken: refreshToken), options: CallOptions(timeout: .seconds(30)))
            } catch let error as RPCError where error.code == .unauthenticated || error.code == .notFound {
                lost += 1
            } catch {
                unchecked += 1  // the check itself failed: neither lost nor kept
            }
        }
        client.beginGracefulShutdown()
        await clientTask.value
        print(
            #"{"bench":"failover",\#(engineField)"replicas":\#(replicas),"service":"AccountService","#
                + #""killed":"replica 0","phase_s":\#(failoverOptions.failoverPhaseSeconds),"clients":\#(emails.count),"#
                + workers.fields(noun: "clients")
                + #""acknowledged":\#(acknowledged.count),"acknowledged_lost":\#(lost),"not_checked":\#(unchecked),"#
                + run.fields + #""sign_ins_per_second":\#(run.rate(acknowledged.count)),"tls":true}"#)
    }
}

/// The refresh tokens of the acknowledged sign-ins, from many tasks.
final class SessionLedger: Sendable {
    private let tokens = Mutex<[String]>([])

    func acknowledged(_ refreshToken: String) { tokens.withLock { $0.append(refreshToken) } }
    var all: [String] { tokens.withLock { $0 } }
}
