import Foundation
import RPCCore
import YediProto

extension YediAccount.AccountService.Client {
    /// Signs up the whole way, as a person trying the system would: `SignUp`, the code from the
    /// development mailbox of the AccountService whose data folder is `accountData`, `CompleteSignUp`.
    /// For tests, benchmarks and demos against a service that mails with `DevelopmentFileSender`.
    public func signUpCompletely(
        _ request: YediAccount.SignUpRequest, accountData: URL, options: CallOptions = CallOptions(),
        mailTimeout: Duration = .seconds(20)
    ) async throws -> YediAccount.CompleteSignUpResponse {
        let started = try await signUp(request, options: options)
        let code = try await DevelopmentFileSender.code(
            forSignUp: started.verificationID, in: accountData.appendingPathComponent("sent-mail"),
            timeout: mailTimeout)
        return try await completeSignUp(
            .init(verificationID: started.verificationID, code: code), options: options)
    }
}

extension DevelopmentFileSender {
    /// The code mailed for sign-up `verificationID`, once the outbox has sent it (polled until `timeout`).
    public static func code(forSignUp verificationID: String, in folder: URL, timeout: Duration) async throws
        -> String
    {
        try await code(forSignUp: verificationID, inAnyOf: [folder], timeout: timeout)
    }

    /// The same, looked for in several mailboxes: replicas on one database share one outbox, so the mail
    /// leaves from whichever replica claims its job, not always the one signed up through.
    public static func code(forSignUp verificationID: String, inAnyOf folders: [URL], timeout: Duration)
        async throws -> String
    {
        let deadline = ContinuousClock.now + timeout
        while true {
            for folder in folders {
                let mail = (try? messages(in: folder)) ?? []
                if let code = mail.last(where: { $0.values["verification_id"] == verificationID })?.values["code"] {
                    return code
                }
            }
            guard ContinuousClock.now < deadline else {
                throw RPCError(
                    code: .deadlineExceeded,
                    message: "no sign-up code for \(verificationID) in \(folders.map(\.path).joined(separator: ", "))")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
