import Foundation

/// A position on the earth in degrees (WGS 84 as phones give it), checked on the way in.
public struct GeoPoint: Sendable, Hashable, CustomStringConvertible {
    public let latitude: Double
    public let longitude: Double

    /// nil unless latitude is within ±90 and longitude within ±180 (and both are finite).
    public init?(latitude: Double, longitude: Double) {
        guard latitude.isFinite, longitude.isFinite, (-90...90).contains(latitude), (-180...180).contains(longitude)
        else { return nil }
        self.latitude = latitude
        self.longitude = longitude
    }

    /// The mean earth radius (IUGG), in metres: what every distance here is measured on.
    public static let earthRadiusMetres = 6_371_008.8

    /// The great-circle distance in metres (haversine): exact enough for "within 700 m" (the sphere is
    /// off the ellipsoid by at most 0.5%), and stable for short distances, unlike the spherical law of
    /// cosines.
    public func distance(to other: GeoPoint) -> Double {
        let phi1 = latitude * .pi / 180
        let phi2 = other.latitude * .pi / 180
        let deltaPhi = (other.latitude - latitude) * .pi / 180
        let deltaLambda = (other.longitude - longitude) * .pi / 180
        let a =
            sin(deltaPhi / 2) * sin(deltaPhi / 2) + cos(phi1) * cos(phi2) * sin(deltaLambda / 2)
            * sin(deltaLambda / 2)
        return 2 * Self.earthRadiusMetres * asin(min(1, sqrt(a)))
    }

    public var description: String { "(\(latitude), \(longitude))" }
}
