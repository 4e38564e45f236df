import Foundation
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// Designer search over 10,000 designers with Korean names, shops and districts: substrings in the
/// middle of a word, two-character queries, ranking, and pages without duplicates or gaps.
final class DesignerSearchTests: XCTestCase {
    struct Seeded {
        var id: String
        var name: String
        var shop: String
        var district: String
    }

    static let families = ["김", "이", "박", "최", "정", "강", "조", "윤", "장", "임", "한", "오", "서", "신", "권"]
    static let givens = ["민준", "서연", "지호", "하은", "도윤", "수아", "예준", "지우", "시우", "서윤", "주원", "하린", "지민", "채원"]
    static let shops = ["헤어", "살롱", "뷰티", "스튜디오", "아뜰리에", "바버샵"]
    static let shopWords = ["예디", "블루밍", "소울", "마레", "오르빛", "리베", "다온", "온새미로"]
    static let districts = [
        "강남구 역삼동", "마포구 연남동", "성동구 성수동", "종로구 익선동", "서초구 반포동", "용산구 한남동", "송파구 잠실동",
        "해운대구 우동", "수성구 범어동", "부평구 부평동",
    ]

    /// A deterministic population (a linear congruential generator, so every run seeds the same data).
    static func population(count: Int) -> [Seeded] {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        return (0..<count).map { index in
            let name = families[next(families.count)] + givens[next(givens.count)]
            let shop = shopWords[next(shopWords.count)] + " " + shops[next(shops.count)] + " \(index % 97)호점"
            return Seeded(
                id: String(format: "d%05d", index), name: name, shop: shop,
                district: districts[next(districts.count)])
        }
    }

    func testSubstringQueriesOverTenThousandDesignersPageWithoutDuplicates() async throws {
        let fixture = try await AccountFixture.start()
        let store = fixture.store
        let population = Self.population(count: 10_000)
        try await store.bulkInsert(
            population.map { designer in
                (
                    AccountStoreContract.user(designer.id, name: designer.name, role: .designer),
                    AccountStoreContract.designer(designer.id, shop: designer.shop, district: designer.district)
                )
            })

        // Brute force over what was seeded is the expected answer.
        func expected(_ query: String) -> Set<String> {
            Set(
                population.filter { $0.name.contains(query) || $0.shop.contains(query) || $0.district.contains(query) }
                    .map(\.id))
        }
        func search(_ query: String, pageSize: Int32) async throws -> [YediAccount.DesignerSummary] {
            var all: [YediAccount.DesignerSummary] = []
            var cursor = ""
            repeat {
                let page = try await fixture.account.searchDesigners(
                    .init(query: query, page: .init(cursor: cursor, limit: pageSize)))
                XCTAssertLessThanOrEqual(page.designers.count, Int(pageSize))
                all += page.designers
                cursor = page.page?.nextCursor ?? ""
            } while !cursor.isEmpty
            return all
        }

        for (query, pageSize) in [("서연", 50), ("연남", 50), ("민준", 37), ("블루밍", 50), ("성수동", 50), ("도윤", 50)]
            as [(String, Int32)]
        {
            let hits = try await search(query, pageSize: pageSize)
            let ids = hits.compactMap(\.user?.id)
            XCTAssertEqual(ids.count, Set(ids).count, "\(query): a designer appeared on two pages")
            XCTAssertEqual(Set(ids), expected(query), "\(query): wrong designers")
            XCTAssertFalse(ids.isEmpty, "\(query) should match someone")
        }

        // In the middle of a word: "예준" inside "김예준", "루밍" inside "블루밍".
        let middle = try await search("루밍", pageSize: 50)
        XCTAssertEqual(Set(middle.compactMap(\.user?.id)), expected("루밍"))

        // A name match outranks a shop or district match, and an exact name comes first.
        let ranked = try await search("김서연", pageSize: 50)
        XCTAssertTrue(ranked.allSatisfy { $0.user?.name == "김서연" })
        let single = try await fixture.account.searchDesigners(.init(query: "연", page: .init(limit: 50)))
        let firstDistrictOnly = single.designers.firstIndex { !($0.user?.name.contains("연") ?? false) }
        let lastName = single.designers.lastIndex { $0.user?.name.contains("연") ?? false }
        if let firstDistrictOnly, let lastName {
            XCTAssertLessThan(lastName, firstDistrictOnly, "name matches come before shop and district matches")
        }

        let empty = await statusCode { _ = try await fixture.account.searchDesigners(.init(query: "  ")) }
        XCTAssertEqual(empty, .invalidArgument)
        let none = try await fixture.account.searchDesigners(.init(query: "없는이름xyz"))
        XCTAssertEqual(none.designers, [])
        let quoted = try await fixture.account.searchDesigners(.init(query: "\"; DROP TABLE user; --"))
        XCTAssertEqual(quoted.designers, [], "queries are data, never syntax")
        try await fixture.stop()
    }
}
