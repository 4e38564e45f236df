import RPCAccess

/// A report about a member, or an inquiry to the operators: what the moderation store keeps.
struct CaseRecord: Sendable, Hashable {
    enum Kind: String, Sendable {
        case report, inquiry
    }

    var id: String
    var app: AppID
    var kind: Kind
    var writerID: String
    /// Reports only.
    var reporteeID: String?
    /// Reports only: from the app's `report_reasons`.
    var reasons: [String]
    var title: String
    var content: String
    var answer: String?
    var answeredBy: String?
    var answeredAtMilliseconds: Int64?
    var createdAtMilliseconds: Int64
}

/// One line of the operator log: who did what to which case or member, and when. Kept after the
/// operator's or the member's account is gone: it is the record of what was done.
struct OperatorActionRecord: Sendable, Hashable {
    var id: String
    var app: AppID
    var operatorID: String
    /// `answer`, `suspend`, `lift-suspension`; ContentService's `hide-post`, `feature-post`, … .
    var action: String
    var subject: String
    var detail: String
    var atMilliseconds: Int64
}

/// Which cases an operator lists.
struct CaseFilter: Sendable, Hashable {
    var kind: CaseRecord.Kind?
    var unansweredOnly: Bool
}
