import RPCCore
import ServiceRuntime
import YediProto

/// The store's records as SLP's messages, and its refusals as statuses naming the field.
extension SlpHandlers {
    /// Runs a store call, turning `SlpStoreError` into the status the app sees.
    func mapped<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as SlpStoreError {
            throw Self.refusal(error)
        } catch let exceeded as QuotaExceeded {
            throw exceeded.status
        }
    }

    static func refusal(_ error: SlpStoreError) -> RPCError {
        switch error {
        case .noProfile:
            RPCError(code: .failedPrecondition, message: "no SLP profile yet: CreateProfile first")
        case .unknownUser:
            RPCError(code: .notFound, message: "other_id: no such SLP member")
        case .notQueued:
            RPCError(code: .failedPrecondition, message: "you are not in the queue: EnterQueue first")
        case .noRequest:
            RPCError(code: .failedPrecondition, message: "other_id: has not requested you")
        case .notYourMatch:
            RPCError(code: .notFound, message: "match_id: not a match of yours")
        case .alreadyRated:
            RPCError(code: .alreadyExists, message: "match_id: you rated this match already")
        case .notOwned(let field):
            RPCError(code: .failedPrecondition, message: "\(field): not one you own")
        }
    }

    static func myPage(_ profile: SlpProfileRecord) -> YediSlp.MyPage {
        YediSlp.MyPage(
            userID: profile.userID, nickname: profile.nickname,
            gender: YediAccount.Gender(rawValue: Int32(profile.gender)),
            birthDate: YediCommon.LocalDate(
                year: Int32(profile.birthDate.year), month: Int32(profile.birthDate.month),
                day: Int32(profile.birthDate.day)),
            email: profile.email, favouriteStudy: profile.favouriteStudy, searchable: profile.searchable,
            partnerMinAge: Int32(profile.partnerMinAge), partnerMaxAge: Int32(profile.partnerMaxAge),
            avatar: Int32(profile.avatar), background: Int32(profile.background),
            ownedAvatars: profile.ownedAvatars.map(Int32.init),
            ownedBackgrounds: profile.ownedBackgrounds.map(Int32.init),
            reputation: profile.reputation.map(Int32.init), comments: profile.comments,
            dodgeCount: Int32(profile.dodgeCount), createdAtMs: profile.createdAtMilliseconds)
    }

    static func person(_ person: SlpPersonRecord) -> YediSlp.Person {
        YediSlp.Person(
            userID: person.userID, nickname: person.nickname, latitude: person.latitude, longitude: person.longitude,
            distanceM: person.metres, studies: person.studies, reputation: person.reputation.map(Int32.init),
            comments: person.comments, gender: YediAccount.Gender(rawValue: Int32(person.gender)),
            avatar: Int32(person.avatar), background: Int32(person.background))
    }
}
