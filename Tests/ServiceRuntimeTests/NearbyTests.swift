import Foundation
import GRDB
import ServiceRuntime
import XCTest

/// Nearby queries: haversine distances against values worked out by hand, the R*Tree narrowing with no
/// point lost at the edge, nearest first with paging, the antimeridian and the poles.
final class NearbyTests: XCTestCase {
    private let index = NearbyIndex("test_place")
    /// Seoul City Hall.
    private let cityHall = GeoPoint(latitude: 37.5663, longitude: 126.9779)!
    /// One degree of latitude on the mean-radius sphere: 2πR / 360.
    private let metresPerDegree = 2 * Double.pi * GeoPoint.earthRadiusMetres / 360

    private func database() throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try queue.write { db in try index.create(in: db) }
        return queue
    }

    /// The point `metres` due north of `point`.
    private func north(of point: GeoPoint, _ metres: Double) -> GeoPoint {
        GeoPoint(latitude: point.latitude + metres / metresPerDegree, longitude: point.longitude)!
    }

    func testNearbyDistancesMatchTheSphere() {
        let origin = GeoPoint(latitude: 0, longitude: 0)!
        XCTAssertEqual(origin.distance(to: GeoPoint(latitude: 0, longitude: 1)!), 111_195.08, accuracy: 0.01)
        XCTAssertEqual(origin.distance(to: GeoPoint(latitude: 1, longitude: 0)!), 111_195.08, accuracy: 0.01)
        XCTAssertEqual(cityHall.distance(to: north(of: cityHall, 700)), 700, accuracy: 0.001)
        // Along the parallel at 60°, a degree of longitude is about half as long.
        let sixty = GeoPoint(latitude: 60, longitude: 10)!
        XCTAssertEqual(sixty.distance(to: GeoPoint(latitude: 60, longitude: 10.01)!), 555.97, accuracy: 0.05)
        XCTAssertEqual(cityHall.distance(to: cityHall), 0)
        XCTAssertEqual(
            origin.distance(to: GeoPoint(latitude: 0, longitude: 180)!), .pi * GeoPoint.earthRadiusMetres,
            accuracy: 0.01, "antipodes")
    }

    func testNearbyRefusesPositionsOffTheEarth() {
        XCTAssertNil(GeoPoint(latitude: 90.0001, longitude: 0))
        XCTAssertNil(GeoPoint(latitude: 0, longitude: -180.5))
        XCTAssertNil(GeoPoint(latitude: .nan, longitude: 0))
        XCTAssertNil(GeoPoint(latitude: 0, longitude: .infinity))
        XCTAssertNotNil(GeoPoint(latitude: -90, longitude: 180))
    }

    func testNearbyFindsPointsWithinTheRadiusNearestFirstOnePageAtATime() throws {
        let queue = try database()
        let places: [(Int64, Double)] = [(1, 100), (2, 699.9), (3, 300), (4, 700.1), (5, 1_000), (6, 300)]
        try queue.write { db in
            for (id, metres) in places { try index.set(id, at: north(of: cityHall, metres), in: db) }
            // Far away: Busan Station.
            try index.set(7, at: GeoPoint(latitude: 35.1151, longitude: 129.0422)!, in: db)
        }
        let all = try queue.read { db in try index.within(700, of: cityHall, limit: 10, in: db) }
        XCTAssertEqual(all.map(\.id), [1, 3, 6, 2], "within 700 m, nearest first, ties by id")
        XCTAssertEqual(all.map { ($0.metres * 10).rounded() / 10 }, [100, 300, 300, 699.9])

        let first = try queue.read { db in try index.within(700, of: cityHall, limit: 2, in: db) }
        XCTAssertEqual(first.map(\.id), [1, 3])
        let after = NearbyIndex.Position(metres: first[1].metres, id: first[1].id)
        let second = try queue.read { db in try index.within(700, of: cityHall, after: after, limit: 2, in: db) }
        XCTAssertEqual(second.map(\.id), [6, 2], "the tie at 300 m is split by id across pages")

        let filtered = try queue.read { db in
            try index.within(700, of: cityHall, limit: 2, in: db) { $0 != 1 && $0 != 3 }
        }
        XCTAssertEqual(filtered.map(\.id), [6, 2], "a filtered page is still full")
    }

    func testNearbyPointsMoveAndGo() throws {
        let queue = try database()
        try queue.write { db in
            try index.set(1, at: north(of: cityHall, 50), in: db)
            try index.set(2, at: north(of: cityHall, 60), in: db)
            try index.set(1, at: north(of: cityHall, 5_000), in: db)  // moved away
            try index.remove(2, in: db)
        }
        let found = try queue.read { db in try index.within(700, of: cityHall, limit: 10, in: db) }
        XCTAssertEqual(found, [])
        let far = try queue.read { db in try index.within(5_001, of: cityHall, limit: 10, in: db) }
        XCTAssertEqual(far.map(\.id), [1])
    }

    func testNearbyAcrossTheAntimeridian() throws {
        let queue = try database()
        let east = GeoPoint(latitude: 0, longitude: 179.999)!
        try queue.write { db in
            try index.set(1, at: GeoPoint(latitude: 0, longitude: -179.999)!, in: db)  // ~222 m across ±180°
            try index.set(2, at: GeoPoint(latitude: 0, longitude: 179.99)!, in: db)  // ~1 km west
            try index.set(3, at: GeoPoint(latitude: 0, longitude: 0)!, in: db)
        }
        let found = try queue.read { db in try index.within(500, of: east, limit: 10, in: db) }
        XCTAssertEqual(found.map(\.id), [1])
        XCTAssertEqual(found.first?.metres ?? 0, 222.39, accuracy: 0.05)
        XCTAssertEqual(GeoBox.covering(east, radius: 500).count, 2, "one box each side of ±180°")
    }

    func testNearbyAtThePoles() throws {
        let queue = try database()
        let nearPole = GeoPoint(latitude: 89.9999, longitude: 0)!
        try queue.write { db in
            try index.set(1, at: GeoPoint(latitude: 89.9999, longitude: 180)!, in: db)  // ~22 m, over the pole
            try index.set(2, at: GeoPoint(latitude: 90, longitude: -45)!, in: db)  // the pole itself, ~11 m
            try index.set(3, at: GeoPoint(latitude: 89.99, longitude: 90)!, in: db)  // ~1.1 km
        }
        let found = try queue.read { db in try index.within(100, of: nearPole, limit: 10, in: db) }
        XCTAssertEqual(found.map(\.id), [2, 1])
        XCTAssertEqual(
            GeoBox.covering(nearPole, radius: 100).first.map { [$0.minLongitude, $0.maxLongitude] }, [-180, 180],
            "a circle over the pole spans every longitude")
    }
}
