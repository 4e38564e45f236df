import Foundation
import NIOConcurrencyHelpers
import RPCCore
import RPCTLS

/// The certificates the TLS tests use, generated once per test process into a temporary directory:
/// the dev PKI from `deploy/dev-pki.sh`, a second unrelated PKI (for "wrong CA"), and an expired
/// server certificate signed by the dev CA. No private key is ever committed.
public final class TestPKI: Sendable {
    /// Lazily made on first use, shared by every test (generation costs a second or two).
    public static let shared: Result<TestPKI, any Error> = Result { try TestPKI() }

    public static func get() throws -> TestPKI { try self.shared.get() }

    public let root: URL
    /// `deploy/dev-pki.sh` output: ca.pem, <service>.pem/.key, yedi-probe.pem/.key.
    public let devPKI: URL
    /// Another run of the same script: a CA our services don't know.
    public let otherPKI: URL

    private init() throws {
        self.root = FileManager.default.temporaryDirectory
            .appendingPathComponent("yedi-tls-tests-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
        self.devPKI = self.root.appendingPathComponent("pki")
        self.otherPKI = self.root.appendingPathComponent("other-pki")
        try FileManager.default.createDirectory(at: self.root, withIntermediateDirectories: true)
        Self.registerCleanup(of: self.root)

        let script = RepositoryPaths.root.appendingPathComponent("deploy/dev-pki.sh").path
        try ProcessRunner.run("/bin/bash", [script, self.devPKI.path], timeout: 60).requireSuccess()
        try ProcessRunner.run("/bin/bash", [script, self.otherPKI.path], timeout: 60).requireSuccess()
        try ProcessRunner.run(
            "/bin/bash",
            ["-c", Self.expiredCertificateScript, "make-expired", self.devPKI.path, self.root.path],
            timeout: 60
        ).requireSuccess()
    }

    public var caFile: String { self.devPKI.appendingPathComponent("ca.pem").path }
    public var otherCAFile: String { self.otherPKI.appendingPathComponent("ca.pem").path }

    /// `name` is a service (account, content, booking, chat) or `yedi-probe`.
    public func certificate(_ name: String) -> String { self.devPKI.appendingPathComponent("\(name).pem").path }
    public func key(_ name: String) -> String { self.devPKI.appendingPathComponent("\(name).key").path }

    /// Signed by the dev CA, SAN localhost/127.0.0.1, valid only during 1-2 January 2020.
    public var expiredCertificate: String { self.root.appendingPathComponent("expired/expired.pem").path }
    public var expiredKey: String { self.root.appendingPathComponent("expired/expired.key").path }

    /// OpenSSL 3.0's `x509`/`req` cannot backdate, so the expired certificate comes from `openssl ca`
    /// with explicit start and end dates and a throwaway CA database. $1 = dev PKI dir, $2 = output root.
    private static let expiredCertificateScript = #"""
        set -euo pipefail
        pki="$1"; out="$2/expired"
        mkdir -p "$out"; cd "$out"
        : > index.txt
        openssl rand -hex 16 > serial
        cat > ca.cnf <<EOF
        [ ca ]
        default_ca = test_ca
        [ test_ca ]
        database = $out/index.txt
        new_certs_dir = $out
        serial = $out/serial
        default_md = sha256
        policy = policy_anything
        unique_subject = no
        copy_extensions = none
        [ policy_anything ]
        commonName = supplied
        [ server_ext ]
        basicConstraints = critical, CA:FALSE
        keyUsage = critical, digitalSignature
        extendedKeyUsage = serverAuth, clientAuth
        subjectAltName = DNS:localhost, IP:127.0.0.1
        EOF
        (umask 077; openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out expired.key)
        openssl req -new -key expired.key -subj /CN=expired-service -out expired.csr
        openssl ca -batch -config ca.cnf -cert "$pki/ca.pem" -keyfile "$pki/ca.key" -in expired.csr \
            -out expired.pem -startdate 20200101000000Z -enddate 20200102000000Z -extensions server_ext -notext
        """#

    // MARK: Cleanup at process exit

    private static let cleanupPath = NIOLockedValueBox<String?>(nil)

    private static func registerCleanup(of directory: URL) {
        Self.cleanupPath.withLockedValue { $0 = directory.path }
        atexit {
            if let path = TestPKI.cleanupPath.withLockedValue({ $0 }) {
                try? FileManager.default.removeItem(atPath: path)
            }
        }
    }
}

/// Paths inside this repository, found from this source file's location.
public enum RepositoryPaths {
    /// Tests/RPCTestSupport/<file> → two levels up.
    public static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
}

extension TestPKI {
    /// A server presenting `service`'s certificate, verifying client certificates against the dev CA.
    public func serverConfiguration(
        _ service: String = "account",
        clientCertificates: TLSConfiguration.ClientCertificateVerification = .none
    ) -> TLSConfiguration {
        .server(
            certificateChainFile: self.certificate(service),
            privateKeyFile: self.key(service),
            trustRootsFile: self.caFile,
            clientCertificateVerification: clientCertificates
        )
    }

    /// A client trusting `trustRoots` (the dev CA by default), presenting `identity`'s certificate if given.
    public func clientConfiguration(trustRoots: String? = nil, identity: String? = nil) -> TLSConfiguration {
        .client(
            trustRootsFile: trustRoots ?? self.caFile,
            certificateChainFile: identity.map(self.certificate),
            privateKeyFile: identity.map(self.key)
        )
    }
}
