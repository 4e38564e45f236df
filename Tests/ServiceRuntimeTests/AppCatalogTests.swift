import Foundation
import RPCAccess
import ServiceRuntime
import XCTest

/// Apps as tenants: the per-app files are read strictly at start, the four in deploy/apps are valid, and
/// a process configured with them serves exactly those apps and roles.
final class AppCatalogTests: XCTestCase {
    private static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private var folder: URL!

    override func setUp() async throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("apps-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDown() async throws {
        try? FileManager.default.removeItem(at: folder)
    }

    private static let valid = """
        {"app": "slp", "name": "SLP", "roles": ["member", "operator"], "operator_roles": ["operator"],
         "sign_in": ["phone"], "limits": {"nearby_radius_m": 700}, "catalogues": {"tags": ["수학", "영어"]},
         "banned_nickname_words": ["Admin"], "retention_days": {"queue_position": 1},
         "provider_client_ids": {"kakao": ["1000001"]}}
        """

    private func write(_ name: String, _ text: String) throws {
        try text.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }

    private func loadError(_ text: String, file: String = "slp.json") throws -> String {
        try write(file, text)
        do {
            _ = try AppCatalog.load(folder: folder.path)
            XCTFail("loaded: \(text)")
            return ""
        } catch {
            return error.description
        }
    }

    func testTenantTheRepositorysAppFilesAreValid() throws {
        let catalog = try AppCatalog.load(folder: Self.repository.appendingPathComponent("deploy/apps").path)
        XCTAssertEqual(catalog.served, ["yedi", "slp", "housetainer", "zipadoo"])
        XCTAssertEqual(
            catalog[.yedi]?.roles, [.customer, .designer, "operator"],
            "YeDi's roles are the rules' CUSTOMER and DESIGNER, and its operators (minted by the probe)")
        XCTAssertEqual(catalog[.yedi]?.operatorRoles, ["operator"])
        XCTAssertEqual(catalog["slp"]?.signIn, ["phone"])
        XCTAssertEqual(catalog["housetainer"]?.operatorRoles, ["admin"])
        XCTAssertEqual(catalog[.yedi]?.catalogues["review_keywords"]?.count, 15, "docs/../domain/yedi.md's catalogue")
        XCTAssertEqual(catalog["slp"]?.limit("nearby_radius_m", default: 0), 700)
    }

    func testTenantAValidFileIsReadWithEveryKey() throws {
        try write("slp.json", Self.valid)
        let slp = try XCTUnwrap(AppCatalog.load(folder: folder.path)["slp"])
        XCTAssertEqual(slp.displayName, "SLP")
        XCTAssertEqual(slp.roles, ["member", "operator"])
        XCTAssertEqual(slp.catalogues["tags"], ["수학", "영어"])
        XCTAssertEqual(slp.retentionDays["queue_position"], 1)
        XCTAssertEqual(slp.providerClientIDs["kakao"], ["1000001"])
        XCTAssertEqual(slp.limit("missing", default: 5), 5)
        XCTAssertTrue(slp.nicknameIsBanned("superADMINistrator"), "case-insensitive")
        XCTAssertFalse(slp.nicknameIsBanned("모래"))
    }

    func testTenantABadFileStopsTheStartNamingFileAndKey() throws {
        let cases: [(String, String, String)] = [
            (
                Self.valid.replacingOccurrences(of: "\"limits\"", with: "\"limitz\""), "slp.json",
                "unknown key \"limitz\""
            ),
            (
                Self.valid.replacingOccurrences(of: "\"member\", \"operator\"]", with: "\"Member!\"]"), "slp.json",
                "\"roles\""
            ),
            (Self.valid.replacingOccurrences(of: "[\"operator\"]", with: "[\"admin\"]"), "slp.json", "operator_roles"),
            (Self.valid.replacingOccurrences(of: "[\"phone\"]", with: "[\"fax\"]"), "slp.json", "sign_in"),
            (
                Self.valid.replacingOccurrences(of: "\"kakao\": [", with: "\"line\": ["), "slp.json",
                "\"provider_client_ids\": \"line\""
            ),
            (Self.valid.replacingOccurrences(of: "700", with: "-1"), "slp.json", "nearby_radius_m"),
            (Self.valid.replacingOccurrences(of: "700", with: "true"), "slp.json", "nearby_radius_m"),
            (Self.valid, "zipadoo.json", "must be named slp.json"),
            ("[1, 2]", "slp.json", "not a JSON object"),
            (
                Self.valid.replacingOccurrences(of: "\"영어\"", with: "\"\(String(repeating: "가", count: 100))\""),
                "slp.json", "catalogues.tags"
            ),
        ]
        for (text, file, expected) in cases {
            for stale in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
                try FileManager.default.removeItem(at: folder.appendingPathComponent(stale))
            }
            let message = try loadError(text, file: file)
            XCTAssertTrue(message.contains("--apps"), message)
            XCTAssertTrue(message.contains(file), message)
            XCTAssertTrue(message.contains(expected), "\(expected) in: \(message)")
        }
    }

    func testTenantAnEmptyOrMissingFolderIsRefused() throws {
        XCTAssertThrowsError(try AppCatalog.load(folder: folder.path)) { error in
            XCTAssertTrue("\(error)".contains("has no <app>.json"), "\(error)")
        }
        XCTAssertThrowsError(try AppCatalog.load(folder: folder.appendingPathComponent("nope").path))
    }

    /// Without `--apps` a process serves YeDi alone; with it, the folder's apps, read at start (and the
    /// verifier and the interceptor follow: AccessRuleTests and JWTVerifierRejectionTests test those with these sets).
    func testTenantTheOptionChoosesTheAppsServed() throws {
        let defaults = ServiceDefaults(name: "account", port: 7001, metricsPort: 9101, peers: [])
        let plain = try ServiceConfiguration.resolve(
            options: try ServiceOptions.parse([]), environment: [:], defaults: defaults)
        XCTAssertNil(plain.appsFolder)
        XCTAssertEqual(try AppCatalog.load(plain).served, [.yedi])
        XCTAssertEqual(try AppCatalog.load(plain).roles, [.yedi: [.customer, .designer]])
        try write("slp.json", Self.valid)
        let fromVariable = try ServiceConfiguration.resolve(
            options: try ServiceOptions.parse([]), environment: ["YEDI_APPS": folder.path], defaults: defaults)
        XCTAssertEqual(fromVariable.appsFolder, folder.path)
        XCTAssertEqual(try AppCatalog.load(fromVariable).served, ["slp"])
        XCTAssertEqual(try AppCatalog.load(fromVariable).roles, ["slp": ["member", "operator"]])
    }
}
