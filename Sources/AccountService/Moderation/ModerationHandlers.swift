import RPCAccess
import RPCCore
import ServiceRuntime
import YediProto

/// `yedi.moderation.Moderation`: reports, inquiries, answers, suspensions and the operator log of each
/// app. The proto admits every app's members and the operator role names; handlers check the caller's
/// own app's operator roles and catalogue, and every read and write is scoped to the caller's app.
struct ModerationHandlers: YediModeration.Moderation.ServiceProtocol, HandlerKitUser {
    let store: any ModerationStore
    /// Its `apps`: each app's report reasons and operator roles.
    let kit: HandlerKit

    static let maxReasons = 8
    static let maxCommentCharacters = 1_000
    static let maxTitleCharacters = 100
    static let maxTextCharacters = 2_000

    /// Whether a member's second report about the same member replaces the first (the app file's
    /// `limits.repeated_report_replaces`: SLP 1) or the first stands (the default).
    static func repeatedReportReplaces(_ app: AppConfiguration?) -> Bool {
        (app?.limit("repeated_report_replaces", default: 0) ?? 0) != 0
    }

    var myCases: PageList { kit.pageList("my-cases") }
    var operatorCases: PageList { kit.pageList("cases") }
    var operatorLog: PageList { kit.pageList("operator-actions") }

    // MARK: Members

    func reportMember(
        _ request: YediModeration.ReportMemberRequest, context: ServerContext
    ) async throws -> YediModeration.ReportMemberResponse {
        let reporter = try context.requireUser()
        let reporteeID = try FieldRule.id(request.reporteeID, field: "reportee_id")
        guard reporteeID != reporter.id else { throw FieldRule.invalid("reportee_id", "you cannot report yourself") }
        guard let catalogue = apps[reporter.app]?.catalogues["report_reasons"] else {
            throw RPCError(code: .failedPrecondition, message: "\(reporter.app) takes no reports")
        }
        let reasons = Array(Set(request.reasons)).sorted()
        guard (1...Self.maxReasons).contains(reasons.count) else {
            throw FieldRule.invalid("reasons", "1 to \(Self.maxReasons) reasons")
        }
        if let unknown = reasons.first(where: { !catalogue.contains($0) }) {
            throw FieldRule.invalid("reasons", "\"\(unknown)\" is not one of this app's report reasons")
        }
        let report = CaseRecord(
            id: ids.next(), app: reporter.app, kind: .report, writerID: reporter.id, reporteeID: reporteeID,
            reasons: reasons, title: reasons[0],
            content: try FieldRule.text(
                request.comment, field: "comment", maxCharacters: Self.maxCommentCharacters, required: false),
            createdAtMilliseconds: clock.nowMilliseconds)
        do {
            let (id, counted) = try await store.report(
                report, quota: quotas["cases.day"], replacingEarlier: Self.repeatedReportReplaces(apps[reporter.app]))
            return YediModeration.ReportMemberResponse(reportID: id, counted: counted)
        } catch AccountStoreError.notFound {
            throw RPCError(code: .notFound, message: "reportee_id: no such member")
        } catch let exceeded as QuotaExceeded {
            throw exceeded.status
        }
    }

    func submitInquiry(
        _ request: YediModeration.SubmitInquiryRequest, context: ServerContext
    ) async throws -> YediModeration.SubmitInquiryResponse {
        let writer = try context.requireUser()
        let inquiry = CaseRecord(
            id: ids.next(), app: writer.app, kind: .inquiry, writerID: writer.id, reporteeID: nil, reasons: [],
            title: try FieldRule.text(
                request.title, field: "title", maxCharacters: Self.maxTitleCharacters, required: true),
            content: try FieldRule.text(
                request.content, field: "content", maxCharacters: Self.maxTextCharacters, required: true),
            createdAtMilliseconds: clock.nowMilliseconds)
        do {
            try await store.submitInquiry(inquiry, quota: quotas["cases.day"])
        } catch let exceeded as QuotaExceeded {
            throw exceeded.status
        }
        return YediModeration.SubmitInquiryResponse(inquiryID: inquiry.id)
    }

    func listMyCases(
        _ request: YediModeration.ListMyCasesRequest, context: ServerContext
    ) async throws -> YediModeration.ListCasesResponse {
        let writer = try context.requireUser()
        let page = try myCases.read(request.page, as: Int64.self)
        let rows = try await store.cases(writerID: writer.id, app: writer.app, after: page.after, limit: page.limit + 1)
        return Self.casesPage(rows, list: myCases, limit: page.limit)
    }

    // MARK: Operators

    func listCases(
        _ request: YediModeration.ListCasesRequest, context: ServerContext
    ) async throws -> YediModeration.ListCasesResponse {
        let operatorUser = try context.requireOperator(of: apps)
        let kind: CaseRecord.Kind? =
            switch request.kind {
            case .report: .report
            case .inquiry: .inquiry
            default: nil
            }
        let page = try operatorCases.read(request.page, as: Int64.self)
        let rows = try await store.cases(
            CaseFilter(kind: kind, unansweredOnly: request.unansweredOnly), app: operatorUser.app, after: page.after,
            limit: page.limit + 1)
        return Self.casesPage(rows, list: operatorCases, limit: page.limit)
    }

    func answerCase(_ request: YediModeration.AnswerCaseRequest, context: ServerContext) async throws
        -> YediModeration.Case
    {
        let operatorUser = try context.requireOperator(of: apps)
        let caseID = try FieldRule.id(request.caseID, field: "case_id")
        let answer = try FieldRule.text(
            request.answer, field: "answer", maxCharacters: Self.maxTextCharacters, required: true)
        do {
            let answered = try await store.answer(
                caseID: caseID, app: operatorUser.app, answer: answer,
                by: action(operatorUser, "answer", subject: caseID, detail: ""))
            return Self.message(answered)
        } catch AccountStoreError.notFound {
            throw RPCError(code: .notFound, message: "case_id: no such case")
        } catch ModerationStoreError.alreadyAnswered {
            throw RPCError(code: .failedPrecondition, message: "case_id: already answered")
        }
    }

    func suspendMember(
        _ request: YediModeration.SuspendMemberRequest, context: ServerContext
    ) async throws -> YediModeration.SuspensionResponse {
        let operatorUser = try context.requireOperator(of: apps)
        let userID = try FieldRule.id(request.userID, field: "user_id")
        guard userID != operatorUser.id else { throw FieldRule.invalid("user_id", "you cannot suspend yourself") }
        guard request.untilMs > clock.nowMilliseconds else {
            throw FieldRule.invalid("until_ms", "must be in the future")
        }
        let reason = try FieldRule.text(request.reason, field: "reason", maxCharacters: 250, required: true)
        do {
            try await store.suspend(
                userID: userID, app: operatorUser.app, until: request.untilMs,
                by: action(operatorUser, "suspend", subject: userID, detail: "until \(request.untilMs): \(reason)"))
        } catch AccountStoreError.notFound {
            throw RPCError(code: .notFound, message: "user_id: no such member")
        }
        context.logger.notice(
            "member suspended; their tokens are revoked everywhere",
            metadata: ["user": "\(context.userTag(userID))", "until-ms": "\(request.untilMs)"])
        return YediModeration.SuspensionResponse(userID: userID, suspendedUntilMs: request.untilMs)
    }

    func liftSuspension(
        _ request: YediModeration.LiftSuspensionRequest, context: ServerContext
    ) async throws -> YediModeration.SuspensionResponse {
        let operatorUser = try context.requireOperator(of: apps)
        let userID = try FieldRule.id(request.userID, field: "user_id")
        do {
            try await store.liftSuspension(
                userID: userID, app: operatorUser.app,
                by: action(operatorUser, "lift-suspension", subject: userID, detail: ""))
        } catch AccountStoreError.notFound {
            throw RPCError(code: .notFound, message: "user_id: no such member")
        }
        return YediModeration.SuspensionResponse(userID: userID, suspendedUntilMs: 0)
    }

    func listOperatorActions(
        _ request: YediModeration.ListOperatorActionsRequest, context: ServerContext
    ) async throws -> YediModeration.ListOperatorActionsResponse {
        let operatorUser = try context.requireOperator(of: apps)
        let page = try operatorLog.read(request.page, as: Int64.self)
        let rows = try await store.operatorActions(app: operatorUser.app, after: page.after, limit: page.limit + 1)
        return YediModeration.ListOperatorActionsResponse(
            actions: rows.prefix(page.limit).map {
                YediModeration.OperatorAction(
                    id: $0.id, operatorID: $0.operatorID, action: $0.action, subject: $0.subject, detail: $0.detail,
                    atMs: $0.atMilliseconds)
            },
            page: operatorLog.next(rows.map { PagePosition(key: $0.atMilliseconds, id: $0.id) }, limit: page.limit))
    }

    func recordOperatorAction(
        _ request: YediModeration.RecordOperatorActionRequest, context: ServerContext
    ) async throws -> YediModeration.RecordOperatorActionResponse {
        let app = AppID(rawValue: request.app)
        guard apps[app] != nil else { throw FieldRule.invalid("app", "not an app this process serves") }
        let recorded = try await store.recordOperatorAction(
            OperatorActionRecord(
                id: try FieldRule.id(request.id, field: "id"), app: app,
                operatorID: try FieldRule.id(request.operatorID, field: "operator_id"),
                action: try FieldRule.text(request.action, field: "action", maxCharacters: 64, required: true),
                subject: try FieldRule.text(request.subject, field: "subject", maxCharacters: 256, required: true),
                detail: try FieldRule.text(request.detail, field: "detail", maxCharacters: 1_000, required: false),
                atMilliseconds: request.atMs))
        return YediModeration.RecordOperatorActionResponse(recorded: recorded)
    }

    // MARK: Messages

    /// An operator log line for what `operatorUser` does now.
    private func action(_ operatorUser: AuthenticatedUser, _ name: String, subject: String, detail: String)
        -> OperatorActionRecord
    {
        OperatorActionRecord(
            id: ids.next(), app: operatorUser.app, operatorID: operatorUser.id, action: name, subject: subject,
            detail: detail, atMilliseconds: clock.nowMilliseconds)
    }

    static func casesPage(_ rows: [CaseRecord], list: PageList, limit: Int) -> YediModeration.ListCasesResponse {
        YediModeration.ListCasesResponse(
            cases: rows.prefix(limit).map(message),
            page: list.next(rows.map { PagePosition(key: $0.createdAtMilliseconds, id: $0.id) }, limit: limit))
    }

    static func message(_ record: CaseRecord) -> YediModeration.Case {
        YediModeration.Case(
            id: record.id, kind: record.kind == .report ? .report : .inquiry, writerID: record.writerID,
            reporteeID: record.reporteeID ?? "", reasons: record.reasons, title: record.title, content: record.content,
            answer: record.answer ?? "", answeredAtMs: record.answeredAtMilliseconds ?? 0,
            createdAtMs: record.createdAtMilliseconds)
    }
}
