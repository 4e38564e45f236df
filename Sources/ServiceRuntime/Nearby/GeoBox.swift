import Foundation

/// A latitude/longitude rectangle that holds every point within a radius of a centre: what the index is
/// asked for before exact distances are computed. Near the antimeridian the rectangle is two (one each
/// side of ±180°); when the circle reaches a pole it spans every longitude.
public struct GeoBox: Sendable, Hashable {
    public var minLatitude: Double
    public var maxLatitude: Double
    public var minLongitude: Double
    public var maxLongitude: Double

    /// The boxes covering the circle of `radius` metres around `centre` (one, or two at the antimeridian).
    public static func covering(_ centre: GeoPoint, radius: Double) -> [GeoBox] {
        let angular = radius / GeoPoint.earthRadiusMetres
        let degrees = angular * 180 / .pi
        let minLatitude = centre.latitude - degrees
        let maxLatitude = centre.latitude + degrees
        // A circle over a pole, or one so large that the longitude span formula fails: every longitude.
        guard minLatitude > -90, maxLatitude < 90 else {
            return [
                GeoBox(
                    minLatitude: max(-90, minLatitude), maxLatitude: min(90, maxLatitude), minLongitude: -180,
                    maxLongitude: 180)
            ]
        }
        // The widest longitude offset of the circle (at the latitude of its tangent points).
        let latitude = centre.latitude * .pi / 180
        let ratio = sin(angular) / cos(latitude)
        guard ratio < 1 else {
            return [GeoBox(minLatitude: minLatitude, maxLatitude: maxLatitude, minLongitude: -180, maxLongitude: 180)]
        }
        let span = asin(ratio) * 180 / .pi
        let west = centre.longitude - span
        let east = centre.longitude + span
        if west < -180 {
            return [
                GeoBox(minLatitude: minLatitude, maxLatitude: maxLatitude, minLongitude: west + 360, maxLongitude: 180),
                GeoBox(minLatitude: minLatitude, maxLatitude: maxLatitude, minLongitude: -180, maxLongitude: east),
            ]
        }
        if east > 180 {
            return [
                GeoBox(minLatitude: minLatitude, maxLatitude: maxLatitude, minLongitude: west, maxLongitude: 180),
                GeoBox(
                    minLatitude: minLatitude, maxLatitude: maxLatitude, minLongitude: -180, maxLongitude: east - 360),
            ]
        }
        return [GeoBox(minLatitude: minLatitude, maxLatitude: maxLatitude, minLongitude: west, maxLongitude: east)]
    }
}
