import PostgresNIO
import ServiceRuntime

/// The nearby search without an extension (PostgreSQL here has `pg_trgm` only): what `NearbyIndex`
/// does on SQLite, with a B-tree on the queue's `(latitude, longitude)` in place of the R*Tree. The
/// same boxes (`GeoBox.covering`, widened by 1e-4° as there), the same haversine distance in Swift
/// (`GeoPoint.distance`), the same order (distance, then queue id) and the same filter after the sort,
/// so both engines answer the same people in the same order.
extension PostgresSlpStore {
    func nearby(
        userID: String, around centre: GeoPoint, radius: Double, limit: Int, now: Int64
    ) async throws -> SlpNearbyRecord {
        try await postgres.snapshot { tx in
            guard let me = try await Self.profile(userID, tx, withComments: false) else {
                throw SlpStoreError.noProfile
            }
            let mine = (SlpRules.age(me.birthDate, now: now), me.partnerMinAge, me.partnerMaxAge)
            var candidates: [(metres: Double, card: Card)] = []
            for box in GeoBox.covering(centre, radius: radius) {
                for row in try await tx.query(
                    """
                    \(unescaped: Self.personSQL)
                    WHERE q.latitude BETWEEN \(box.minLatitude - 1e-4) AND \(box.maxLatitude + 1e-4)
                        AND q.longitude BETWEEN \(box.minLongitude - 1e-4) AND \(box.maxLongitude + 1e-4)
                    """)
                {
                    let card = try Card(row)
                    guard let point = GeoPoint(latitude: card.person.latitude, longitude: card.person.longitude)
                    else { continue }
                    let metres = centre.distance(to: point)
                    guard metres <= radius else { continue }
                    candidates.append((metres, card))
                }
            }
            candidates.sort { ($0.metres, $0.card.queueID) < ($1.metres, $1.card.queueID) }
            var found: [SlpPersonRecord] = []
            var seen = Set<Int64>()
            for (metres, card) in candidates where found.count < limit && seen.insert(card.queueID).inserted {
                guard card.person.userID != userID else { continue }
                let theirs = (SlpRules.age(card.birthDate, now: now), card.partnerMinAge, card.partnerMaxAge)
                guard SlpRules.agesFit(mine, theirs) else { continue }
                var person = card.person
                person.metres = metres
                found.append(person)
            }
            let requesters = try await tx.query(
                """
                \(unescaped: Self.personSQL) JOIN slp_request r ON r.from_id = q.user_id WHERE r.to_id = \(userID)
                ORDER BY r.created_at_ms, r.from_id
                """
            ).map { row in
                var person = try Card(row).person
                let point = GeoPoint(latitude: person.latitude, longitude: person.longitude)
                person.metres = point.map { centre.distance(to: $0) } ?? 0
                return person
            }
            let comments = try await Self.comments(
                of: found.map(\.userID) + requesters.map(\.userID), limit: SlpRules.commentsShown, tx)
            func withComments(_ person: SlpPersonRecord) -> SlpPersonRecord {
                var person = person
                person.comments = comments[person.userID] ?? []
                return person
            }
            return SlpNearbyRecord(people: found.map(withComments), requesters: requesters.map(withComments))
        }
    }
}
