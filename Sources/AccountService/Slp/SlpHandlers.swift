import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// `yedi.slp.Matching`: SLP's profile, queue, requests, matches, ratings and reports (docs/slp.md). The
/// proto admits SLP members only; every outcome the app reacts to is an enum value in an OK reply, and
/// the decisions that pair members are the store's, inside one transaction each.
struct SlpHandlers: YediSlp.Matching.ServiceProtocol, HandlerKitUser {
    let store: any SlpStore
    /// Reports are the platform's moderation reports (one counted per reporter and reportee, a second
    /// replacing the first); their distinct reporters gate queue entry.
    let moderation: any ModerationStore
    /// The platform's accounts: SignUp's tickets, sessions and client limits.
    let account: AccountHandlers
    var kit: HandlerKit { account.kit }

    var app: AppConfiguration? { apps[SQLiteSlpStore.app] }

    // MARK: Profile

    func createProfile(
        _ request: YediSlp.CreateProfileRequest, context: ServerContext
    ) async throws -> YediSlp.CreateProfileResponse {
        let user = try context.requireUser()
        let birthDate = try FieldRules.birthDate(request.birthDate, today: clock.now)
        guard SlpRules.age(birthDate, now: clock.nowMilliseconds) >= SlpRules.minimumAge else {
            throw FieldRule.invalid("birth_date", "SLP is for people aged \(SlpRules.minimumAge) or more")
        }
        let profile = SlpProfileRecord(
            userID: user.id, gender: try FieldRules.gender(request.gender), birthDate: birthDate,
            email: try FieldRule.email(request.email), createdAtMilliseconds: clock.nowMilliseconds)
        let created = try await mapped { try await store.createProfile(profile) }
        guard let stored = try await mapped({ try await store.profile(userID: user.id) }) else {
            throw Self.refusal(.noProfile)
        }
        return YediSlp.CreateProfileResponse(
            outcome: created ? .created : .alreadyRegistered, myPage: Self.myPage(stored))
    }

    func getMyPage(_ request: YediSlp.GetMyPageRequest, context: ServerContext) async throws -> YediSlp.MyPage {
        let user = try context.requireUser()
        guard let profile = try await mapped({ try await store.profile(userID: user.id) }) else {
            throw Self.refusal(.noProfile)
        }
        return Self.myPage(profile)
    }

    func updateMyPage(_ request: YediSlp.UpdateMyPageRequest, context: ServerContext) async throws -> YediSlp.MyPage {
        let user = try context.requireUser()
        let (minimum, maximum) = try SlpFields.ageRange(min: request.partnerMinAge, max: request.partnerMaxAge)
        let update = SlpProfileUpdate(
            gender: try FieldRules.gender(request.gender),
            favouriteStudy: try FieldRule.text(
                request.favouriteStudy, field: "favourite_study", maxCharacters: SlpRules.maxFavouriteStudyCharacters,
                required: false),
            searchable: request.searchable, partnerMinAge: minimum, partnerMaxAge: maximum,
            avatar: try SlpFields.item(request.avatar, in: SlpRules.avatars, field: "avatar"),
            background: try SlpFields.item(request.background, in: SlpRules.backgrounds, field: "background"))
        return Self.myPage(try await mapped { try await store.updateProfile(userID: user.id, update) })
    }

    // MARK: Queue

    func getState(_ request: YediSlp.GetStateRequest, context: ServerContext) async throws
        -> YediSlp.GetStateResponse
    {
        let user = try context.requireUser()
        let state = try await mapped { try await store.state(userID: user.id) }
        return YediSlp.GetStateResponse(
            state: state.active != nil ? .matched : state.queued ? .matching : .general,
            matchID: state.active?.matchID ?? "", partnerID: state.active?.partnerID ?? "",
            partnerNickname: state.partnerNickname, dodged: state.dodged, rated: state.rated,
            lastMatchID: state.lastMatchID ?? "")
    }

    func enterQueue(_ request: YediSlp.EnterQueueRequest, context: ServerContext) async throws
        -> YediSlp.EnterQueueResponse
    {
        let user = try context.requireUser()
        let point = try SlpFields.point(latitude: request.latitude, longitude: request.longitude)
        let studies = try SlpFields.studies(request.studies)
        let reporters = try await moderation.reporterCount(of: user.id, app: user.app)
        if reporters
            >= (app?.limit("reporters_before_queue_refusal", default: SlpRules.defaultReportersBeforeRefusal)
                ?? SlpRules.defaultReportersBeforeRefusal)
        {
            // Still matched beats reported: the app must open the chat.
            let state = try await mapped { try await store.state(userID: user.id) }
            if let active = state.active {
                return YediSlp.EnterQueueResponse(
                    outcome: .alreadyMatched, partnerID: active.partnerID, matchID: active.matchID)
            }
            return YediSlp.EnterQueueResponse(outcome: .reported)
        }
        let outcome = try await mapped {
            try await store.enterQueue(userID: user.id, at: point, studies: studies, now: clock.nowMilliseconds)
        }
        switch outcome {
        case .entered:
            return YediSlp.EnterQueueResponse(outcome: .entered)
        case .penalty(let tier, let endsAt):
            return YediSlp.EnterQueueResponse(outcome: .penalty, penaltyTier: Int32(tier), penaltyEndsAtMs: endsAt)
        case .alreadyMatched(let active):
            return YediSlp.EnterQueueResponse(
                outcome: .alreadyMatched, partnerID: active.partnerID, matchID: active.matchID)
        }
    }

    func leaveQueue(_ request: YediSlp.LeaveQueueRequest, context: ServerContext) async throws
        -> YediSlp.LeaveQueueResponse
    {
        let user = try context.requireUser()
        guard let active = try await mapped({ try await store.leaveQueue(userID: user.id) }) else {
            return YediSlp.LeaveQueueResponse(outcome: .left)
        }
        return YediSlp.LeaveQueueResponse(
            outcome: .alreadyMatched, partnerID: active.partnerID, matchID: active.matchID)
    }

    func searchNearby(_ request: YediSlp.SearchNearbyRequest, context: ServerContext) async throws
        -> YediSlp.SearchNearbyResponse
    {
        let user = try context.requireUser()
        let centre = try SlpFields.point(latitude: request.latitude, longitude: request.longitude)
        let radius = Double(app?.limit("nearby_radius_m", default: SlpRules.defaultRadiusMetres) ?? 700)
        let found = try await mapped {
            try await store.nearby(
                userID: user.id, around: centre, radius: radius, limit: SlpRules.nearbyLimit,
                now: clock.nowMilliseconds)
        }
        var seen = Set<String>()
        let nearbyStudies = found.people.flatMap(\.studies).filter { seen.insert($0.lowercased()).inserted }
        return YediSlp.SearchNearbyResponse(
            people: found.people.map(Self.person), requesters: found.requesters.map(Self.person),
            recommendedStudies: app?.catalogues["recommended_studies"] ?? [], nearbyStudies: nearbyStudies)
    }

    // MARK: Matching

    func request(_ request: YediSlp.OtherRequest, context: ServerContext) async throws -> YediSlp.RequestResponse {
        let user = try context.requireUser()
        let other = try SlpFields.other(request.otherID, me: user.id)
        let outcome = try await mapped {
            try await store.request(from: user.id, to: other, matchID: ids.next(), now: clock.nowMilliseconds)
        }
        switch outcome {
        case .sent: return YediSlp.RequestResponse(outcome: .sent)
        case .otherNotSearching: return YediSlp.RequestResponse(outcome: .otherNotSearching)
        case .matched(let id): return YediSlp.RequestResponse(outcome: .matched, matchID: id)
        case .alreadyMatched(let active):
            return YediSlp.RequestResponse(outcome: .alreadyMatched, matchID: active.matchID)
        }
    }

    func accept(_ request: YediSlp.OtherRequest, context: ServerContext) async throws -> YediSlp.AcceptResponse {
        let user = try context.requireUser()
        let other = try SlpFields.other(request.otherID, me: user.id)
        let outcome = try await mapped {
            try await store.accept(userID: user.id, other: other, matchID: ids.next(), now: clock.nowMilliseconds)
        }
        switch outcome {
        case .matched(let id): return YediSlp.AcceptResponse(outcome: .matched, matchID: id)
        case .otherMatched: return YediSlp.AcceptResponse(outcome: .otherMatched)
        case .otherNotSearching: return YediSlp.AcceptResponse(outcome: .otherNotSearching)
        case .alreadyMatched(let active):
            return YediSlp.AcceptResponse(outcome: .alreadyMatched, matchID: active.matchID)
        }
    }

    func endMatch(_ request: YediSlp.OtherRequest, context: ServerContext) async throws -> YediSlp.EndMatchResponse {
        let user = try context.requireUser()
        let other = try SlpFields.other(request.otherID, me: user.id)
        guard
            let dodges = try await mapped({
                try await store.endMatch(userID: user.id, other: other, now: clock.nowMilliseconds)
            })
        else { return YediSlp.EndMatchResponse(outcome: .notYourPartner) }
        return YediSlp.EndMatchResponse(outcome: .ended, dodgeCount: Int32(dodges))
    }

    func rate(_ request: YediSlp.RateRequest, context: ServerContext) async throws -> YediSlp.RateResponse {
        let user = try context.requireUser()
        let rating = SlpRatingRecord(
            matchID: try FieldRule.id(request.matchID, field: "match_id"), raterID: user.id,
            flags: try SlpFields.flags(request.flags),
            comment: try FieldRule.text(
                request.comment, field: "comment", maxCharacters: SlpRules.maxRatingComment, required: false),
            createdAtMilliseconds: clock.nowMilliseconds)
        return YediSlp.RateResponse(endedMatch: try await mapped { try await store.rate(rating) })
    }

    func report(_ request: YediSlp.ReportRequest, context: ServerContext) async throws -> YediSlp.ReportResponse {
        let user = try context.requireUser()
        let other = try SlpFields.other(request.otherID, me: user.id)
        let catalogue = app?.catalogues["report_reasons"] ?? []
        let reasons = Array(Set(request.reasons)).sorted()
        guard (1...SlpRules.maxReasons).contains(reasons.count) else {
            throw FieldRule.invalid("reasons", "1 to \(SlpRules.maxReasons) reasons")
        }
        if let unknown = reasons.first(where: { !catalogue.contains($0) }) {
            throw FieldRule.invalid("reasons", "\"\(unknown)\" is not one of SLP's report reasons")
        }
        let comment = try FieldRule.text(
            request.comment, field: "comment", maxCharacters: SlpRules.maxReportComment, required: false)
        guard try await store.isPartner(other, of: user.id) else {
            throw RPCError(code: .failedPrecondition, message: "other_id: not a partner of yours")
        }
        let report = CaseRecord(
            id: ids.next(), app: user.app, kind: .report, writerID: user.id, reporteeID: other, reasons: reasons,
            title: reasons[0], content: comment, createdAtMilliseconds: clock.nowMilliseconds)
        let (id, counted): (String, Bool)
        do {
            (id, counted) = try await mapped {
                try await moderation.report(
                    report, quota: quotas["cases.day"],
                    replacingEarlier: ModerationHandlers.repeatedReportReplaces(app))
            }
        } catch AccountStoreError.notFound {
            throw Self.refusal(.unknownUser)
        }
        return YediSlp.ReportResponse(reportID: id, counted: counted)
    }

    // MARK: Chat

    func getMatch(_ request: YediSlp.GetMatchRequest, context: ServerContext) async throws
        -> YediSlp.GetMatchResponse
    {
        let matchID = try FieldRule.id(request.matchID, field: "match_id")
        guard let match = try await store.match(id: matchID) else { return YediSlp.GetMatchResponse(found: false) }
        return YediSlp.GetMatchResponse(
            found: true, active: match.active, memberA: match.members.0, memberB: match.members.1)
    }
}
