import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import YediCrypto
import YediProto

/// `yedi.housetainer.Members`: provider sign-in, invitation codes, signup, the waitlist and member pages
/// (docs/housetainer.md). Sessions, tickets and the identity seam are the platform's (`AccountHandlers`);
/// every rule that must hold under concurrency is the store's, inside one transaction.
struct HousetainerMembersHandlers: YediHousetainer.Members.ServiceProtocol, HandlerKitUser {
    let account: AccountHandlers
    let store: any HousetainerMemberStore
    let codes: any InvitationCodeSource
    /// Failed invitation checks per ticket (10 an hour), charged only on failure.
    let ticketFailures: SharedRateLimiter<String>

    var kit: HandlerKit { account.kit }
    private var app: AppConfiguration? { apps[HousetainerRules.app] }

    static let ticketFailureLimit = RateLimit(burst: 10, period: .seconds(3_600))

    init(account: AccountHandlers, store: any HousetainerMemberStore, codes: any InvitationCodeSource) {
        self.account = account
        self.store = store
        self.codes = codes
        ticketFailures = SharedRateLimiter(limit: Self.ticketFailureLimit)
    }

    // MARK: Sign-in and signup

    func signIn(_ request: YediHousetainer.SignInRequest, context: ServerContext) async throws
        -> YediHousetainer.SignInResponse
    {
        try account.admit(context)
        let assertion = request.assertion ?? YediAccount.ProviderAssertion()
        let verified = try await account.identity.verifier.verify(
            .provider(name: assertion.provider, token: assertion.token), app: context.app)
        let now = clock.nowMilliseconds
        if let id = try await mapped({ try await store.signIn(identity: verified, app: context.app, now: now) }),
            let user = try await account.store.user(id: id)
        {
            try AccountHandlers.refuseIfSuspended(user, now: now)
            let refresh = account.credentials.sessions.newRefreshToken(userID: user.id)
            try await account.store.createSession(refresh.record)
            return YediHousetainer.SignInResponse(
                outcome: .signedIn, session: try account.credentials.sessions.session(for: user, refresh: refresh),
                memberID: user.id, email: user.email)
        }
        guard let email = verified.email, !email.isEmpty else {
            throw RPCError(
                code: .failedPrecondition,
                message: "assertion: the provider vouched for no e-mail address, which identifies a member")
        }
        let ticket = Base64URL.encode(SecureRandom.bytes(32))
        let record = SignUpTicketRecord(
            ticketHash: SHA256.hash(ticket), app: context.app,
            identity: VerifiedIdentity(kind: verified.kind, subject: verified.subject, email: email.lowercased()),
            expiresAtMilliseconds: now + HousetainerRules.ticketLifetime)
        try await account.store.createSignUpTicket(record)
        return YediHousetainer.SignInResponse(
            outcome: .unregistered, ticket: ticket, ticketExpiresAtMs: record.expiresAtMilliseconds,
            email: email.lowercased())
    }

    func verifyInvitation(_ request: YediHousetainer.VerifyInvitationRequest, context: ServerContext) async throws
        -> YediHousetainer.VerifyInvitationResponse
    {
        let ticket = try await self.ticket(request.ticket, context: context)
        let key = Base64URL.encode(ticket.ticketHash)
        let now = clock.now.timeIntervalSince1970
        if let seconds = ticketFailures.peek(key, now: now).retryAfter {
            throw RPCError.tryAgainLater(
                "code: 10 wrong codes within an hour for this ticket", inSeconds: seconds)
        }
        do {
            let code = try HousetainerFields.code(request.code)
            let invitation = try await checkedInvitation(code, for: ticket)
            return YediHousetainer.VerifyInvitationResponse(
                inviterNickname: invitation.inviterNickname ?? "", inviteeName: invitation.inviteeName)
        } catch let error as RPCError {
            _ = ticketFailures.take(key, now: now)
            throw error
        }
    }

    func checkNickname(_ request: YediHousetainer.CheckNicknameRequest, context: ServerContext) async throws
        -> YediHousetainer.CheckNicknameResponse
    {
        // Charged to the client's sign-in limits, as the platform's CheckNickname: no cheap enumeration.
        try account.admit(context)
        let nickname: String
        do {
            nickname = try HousetainerFields.nickname(request.nickname, app: app)
        } catch {
            return YediHousetainer.CheckNicknameResponse(availability: .invalid, reason: error.message)
        }
        guard try await !account.store.nicknameTaken(nickname, app: context.app) else {
            return YediHousetainer.CheckNicknameResponse(availability: .taken, reason: HousetainerRules.nicknameTaken)
        }
        return YediHousetainer.CheckNicknameResponse(availability: .available)
    }

    func signUp(_ request: YediHousetainer.SignUpRequest, context: ServerContext) async throws
        -> YediHousetainer.SignUpResponse
    {
        let nickname = try HousetainerFields.nickname(request.nickname, app: app)
        let terms = try HousetainerFields.terms(
            request.acceptedTerms.map { ($0.kind, $0.version) }, required: HousetainerRules.terms)
        let codeRequired = app?.limit("invitation_required", default: 1) != 0
        let code = codeRequired ? try HousetainerFields.code(request.code) : nil
        let ticket = try await self.ticket(request.ticket, context: context)
        try account.admit(context)
        let now = clock.nowMilliseconds
        let user = UserRecord(
            id: ids.next(), role: "member", app: context.app, email: ticket.identity.email ?? "", name: nickname,
            phone: "", gender: 0, birthDate: nil, passwordHash: nil, createdAtMilliseconds: now, nickname: nickname)
        let refresh = account.credentials.sessions.newRefreshToken(userID: user.id)
        try await mapped {
            try await store.signUp(
                HousetainerSignUp(
                    ticket: ticket, user: user, session: refresh.record, code: code, codeLifetime: codeLifetime,
                    terms: terms, now: now))
        }
        return YediHousetainer.SignUpResponse(
            memberID: user.id, session: try account.credentials.sessions.session(for: user, refresh: refresh))
    }

    // MARK: Waitlist

    func joinWaitlist(_ request: YediHousetainer.JoinWaitlistRequest, context: ServerContext) async throws
        -> YediHousetainer.JoinWaitlistResponse
    {
        let email = try FieldRule.email(request.email)
        let snsURL = try FieldRule.webURL(request.snsURL, field: "sns_url")
        let instagramID = try HousetainerFields.instagramID(request.instagramID)
        _ = try await ticket(request.ticket, context: context)
        try account.admit(context)
        let now = clock.nowMilliseconds
        let created = try await store.joinWaitlist(
            WaitlistRecord(
                app: context.app, email: email, snsURL: snsURL, instagramID: instagramID, createdAtMilliseconds: now,
                updatedAtMilliseconds: now))
        return YediHousetainer.JoinWaitlistResponse(created: created)
    }

    func listWaitlist(_ request: YediHousetainer.ListWaitlistRequest, context: ServerContext) async throws
        -> YediHousetainer.ListWaitlistResponse
    {
        let admin = try context.requireOperator(of: apps)
        let list = kit.pageList("housetainer-waitlist")
        let (after, limit) = try list.read(request.page, as: Int64.self)
        let entries = try await store.waitlist(app: admin.app, after: after, limit: limit + 1)
        return YediHousetainer.ListWaitlistResponse(
            entries: entries.prefix(limit).map {
                YediHousetainer.WaitlistEntry(
                    email: $0.email, snsURL: $0.snsURL, instagramID: $0.instagramID,
                    createdAtMs: $0.createdAtMilliseconds, updatedAtMs: $0.updatedAtMilliseconds)
            },
            page: list.next(entries.map { PagePosition(key: $0.createdAtMilliseconds, id: $0.email) }, limit: limit))
    }

    // MARK: Invitations

    func createInvitation(_ request: YediHousetainer.CreateInvitationRequest, context: ServerContext) async throws
        -> YediHousetainer.Invitation
    {
        let user = try context.requireUser()
        let email = try FieldRule.email(request.inviteeEmail, field: "invitee_email")
        let name = try FieldRule.name(request.inviteeName, field: "invitee_name", maxCharacters: 50)
        guard let inviter = try await store.member(id: user.id, app: user.app) else {
            throw RPCError(code: .failedPrecondition, message: "not a Housetainer member")
        }
        let days = app?.limit("invite_code_days", default: HousetainerRules.defaultCodeDays) ?? 7
        let invitation = try await mapped {
            try await store.createInvitation(
                InvitationRecord(
                    id: ids.next(), app: user.app, code: "", inviterID: user.id, inviteeEmail: email,
                    inviteeName: name, stored: .sent, createdAtMilliseconds: clock.nowMilliseconds),
                quota: app?.limit("invitations_per_member", default: HousetainerRules.defaultQuota) ?? 3,
                lifetime: codeLifetime, draw: { [codes] in codes.next() },
                mail: { HousetainerInvitationMail.invitation($0, inviter: inviter.nickname, days: days) })
        }
        return message(invitation)
    }

    /// An admin's code for someone nobody invited (the first members): no inviter, so no quota and no
    /// buddy link; the invitee's page shows no inviter. An address that is a member's is refused as for
    /// members' invitations. The issuing admin is kept with the code (`issued_by`).
    func issueInvitation(_ request: YediHousetainer.CreateInvitationRequest, context: ServerContext) async throws
        -> YediHousetainer.Invitation
    {
        let admin = try context.requireOperator(of: apps)
        let email = try FieldRule.email(request.inviteeEmail, field: "invitee_email")
        let name = try FieldRule.name(request.inviteeName, field: "invitee_name", maxCharacters: 50)
        let days = app?.limit("invite_code_days", default: HousetainerRules.defaultCodeDays) ?? 7
        let invitation = try await mapped {
            try await store.createInvitation(
                InvitationRecord(
                    id: ids.next(), app: admin.app, code: "", inviterID: nil, inviteeEmail: email,
                    inviteeName: name, stored: .sent, createdAtMilliseconds: clock.nowMilliseconds,
                    issuedBy: admin.id),
                quota: .max, lifetime: codeLifetime, draw: { [codes] in codes.next() },
                mail: { HousetainerInvitationMail.invitation($0, inviter: "하우스테이너", days: days) })
        }
        return message(invitation)
    }

    func listMyInvitations(_ request: YediHousetainer.ListMyInvitationsRequest, context: ServerContext) async throws
        -> YediHousetainer.ListMyInvitationsResponse
    {
        let user = try context.requireUser()
        return YediHousetainer.ListMyInvitationsResponse(
            invitations: try await store.invitations(inviterID: user.id, app: user.app).map(message))
    }

    // MARK: Member pages

    func getMember(_ request: YediHousetainer.GetMemberRequest, context: ServerContext) async throws
        -> YediHousetainer.Member
    {
        let user = try context.requireUser()
        let id = try FieldRule.id(request.memberID, field: "member_id")
        guard let member = try await store.member(id: id, app: user.app) else {
            throw RPCError(code: .notFound, message: "member_id: no such member")
        }
        return try await page(member, ownedBy: user)
    }

    func updateMember(_ request: YediHousetainer.UpdateMemberRequest, context: ServerContext) async throws
        -> YediHousetainer.Member
    {
        let user = try context.requireUser()
        let gender =
            request.gender == .unspecified ? 0 : try FieldRules.gender(request.gender)
        let birthday =
            (request.birthday?.year ?? 0) == 0
            ? nil : try FieldRules.birthDate(request.birthday, today: clock.now, field: "birthday")
        let nickname = try HousetainerFields.nickname(request.nickname, app: app)
        // Its shape only: ContentService owns images (as for YeDi's profile images).
        let photo = try FieldRule.imageID(request.photoImageID, field: "photo_image_id")
        try await mapped {
            try await store.updateMember(
                id: user.id, app: user.app,
                HousetainerMemberUpdate(gender: gender, birthday: birthday, nickname: nickname, photoImageID: photo))
        }
        guard let member = try await store.member(id: user.id, app: user.app) else {
            throw RPCError(code: .notFound, message: "no such member")
        }
        return try await page(member, ownedBy: user)
    }

    func setMemberType(_ request: YediHousetainer.SetMemberTypeRequest, context: ServerContext) async throws
        -> YediHousetainer.Member
    {
        let admin = try context.requireOperator(of: apps)
        let id = try FieldRule.id(request.memberID, field: "member_id")
        let type = try HousetainerRules.storedType(request.type)
        do {
            try await store.setMemberType(id: id, app: admin.app, type: type)
        } catch HousetainerStoreError.notFound {
            throw RPCError(code: .notFound, message: "member_id: no such member")
        }
        guard let member = try await store.member(id: id, app: admin.app) else {
            throw RPCError(code: .notFound, message: "member_id: no such member")
        }
        return try await page(member, ownedBy: admin)
    }

    // MARK: Helpers

    /// How long an S code signs someone up: the app's `invite_code_days` (7).
    private var codeLifetime: Int64 {
        Int64(app?.limit("invite_code_days", default: HousetainerRules.defaultCodeDays) ?? 7) * 86_400_000
    }

    /// The live sign-up ticket of the call's app, or `UNAUTHENTICATED`.
    private func ticket(_ value: String, context: ServerContext) async throws -> SignUpTicketRecord {
        let refused = RPCError(code: .unauthenticated, message: "ticket: unknown, expired or already used")
        guard !value.isEmpty, value.utf8.count <= 200,
            let ticket = try await account.store.signUpTicket(
                hash: SHA256.hash(value), app: context.app, now: clock.nowMilliseconds)
        else { throw refused }
        return ticket
    }

    /// The code if it may sign up the ticket's address now; each refusal as the app must show it.
    private func checkedInvitation(_ code: String, for ticket: SignUpTicketRecord) async throws -> InvitationRecord {
        guard let invitation = try await store.invitation(code: code, app: ticket.app) else {
            throw RPCError(code: .notFound, message: "code: does not exist")
        }
        guard invitation.status(now: clock.nowMilliseconds, lifetime: codeLifetime) == .sent else {
            throw RPCError(code: .failedPrecondition, message: "code: expired")
        }
        guard invitation.inviteeEmail == ticket.identity.email?.lowercased() else {
            throw RPCError(code: .permissionDenied, message: "code: sent to another address")
        }
        return invitation
    }

    private func page(_ member: HousetainerMemberRecord, ownedBy user: AuthenticatedUser) async throws
        -> YediHousetainer.Member
    {
        var page = YediHousetainer.Member(
            id: member.id, nickname: member.nickname, type: HousetainerRules.type(member.type),
            inviterNickname: member.inviterNickname ?? "", inviterLeft: member.inviterLeft, buddies: member.buddies,
            createdAtMs: member.createdAtMilliseconds, photoImageID: member.photoImageID)
        guard member.id == user.id else { return page }
        page.gender = YediAccount.Gender(rawValue: Int32(member.gender))
        page.birthday = member.birthday.map {
            YediCommon.LocalDate(year: Int32($0.year), month: Int32($0.month), day: Int32($0.day))
        }
        page.invitations = try await store.invitations(inviterID: user.id, app: user.app).map(message)
        return page
    }

    private func message(_ invitation: InvitationRecord) -> YediHousetainer.Invitation {
        let status = invitation.status(now: clock.nowMilliseconds, lifetime: codeLifetime)
        return YediHousetainer.Invitation(
            id: invitation.id, code: invitation.code, inviteeEmail: invitation.inviteeEmail,
            inviteeName: invitation.inviteeName,
            status: status == .sent ? .sent : status == .joined ? .joined : .expired,
            createdAtMs: invitation.createdAtMilliseconds,
            expiresAtMs: invitation.stored == .sent ? invitation.createdAtMilliseconds + codeLifetime : 0,
            joinedAtMs: invitation.joinedAtMilliseconds ?? 0)
    }

    /// Runs a store call, turning `HousetainerStoreError` into the status the app sees.
    private func mapped<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as HousetainerStoreError {
            throw HousetainerRules.refusal(error)
        }
    }
}
