import Foundation
import NIOConcurrencyHelpers

/// A payment gateway that never leaves the machine, so the payment flow runs offline (tests, the README
/// tour, the bench). Which payment key the "customer" brings back from the UI decides the outcome:
///
/// - `dev_ok_…`: approved.
/// - `dev_slow_…`: approved after `slowAnswer` (a confirmation still in flight, for race tests).
/// - `dev_insufficient_…`: declined, `REJECT_CARD_PAYMENT` (limit exceeded or insufficient funds).
/// - `dev_expired_…`: declined, `INVALID_CARD_EXPIRATION`.
/// - `dev_timeout_…`: charged, but the answer is lost (`unavailable("timeout")`): reconciliation finds it.
/// - `dev_down_…`: no answer and nothing charged (`unavailable`).
/// - anything else: declined, `NOT_FOUND_PAYMENT_SESSION`.
///
/// Each order is a JSON file in `folder` (`<data>/dev-payments`, or one folder shared by a service's
/// replicas), so a restarted process (the crash test) or another replica asks the same "provider": with a
/// folder, an order's file is read on every use (another process may have changed it); without one it
/// lives in memory. Idempotency keys are honoured as a PG does: a repeated key answers the first result
/// without charging or refunding again. Processes sharing the folder change orders one at a time (an
/// exclusive `flock` on the folder's `.lock` around each read-change-write), so two replicas confirming or
/// refunding one order at once lose neither change.
public final class DevelopmentPaymentProvider: PaymentProvider {
    public let name = "development"
    public let folder: URL?
    public let slowAnswer: Duration
    private let orders = NIOLockedValueBox<[String: DevelopmentPaymentRecord]>([:])

    public init(folder: URL?, slowAnswer: Duration = .seconds(2)) {
        self.folder = folder
        self.slowAnswer = slowAnswer
    }

    public func prepare(_ order: PaymentOrder) -> PaymentCheckout {
        PaymentCheckout(hint: "development provider: confirm with payment key dev_ok_<anything> (see docs/payments.md)")
    }

    public func confirm(_ order: PaymentOrder, paymentKey: String, idempotencyKey: String) async throws
        -> ProviderPayment
    {
        if paymentKey.hasPrefix("dev_slow_") { try await Task.sleep(for: slowAnswer) }
        if paymentKey.hasPrefix("dev_down_") { throw PaymentProviderError.unavailable("connection refused") }
        let outcome: Result<ProviderPayment, PaymentProviderError> = try update(order.orderID) { record in
            record.confirmCalls += 1
            if let earlier = record.approvedBy {
                // A repeated key answers the first result; another key for a captured order is refused.
                guard earlier == idempotencyKey, record.paymentKey == paymentKey else {
                    return .failure(.declined(code: "ALREADY_PROCESSED_PAYMENT", message: "이미 처리된 결제 입니다."))
                }
                return .success(record.payment)
            }
            if let decline = Self.decline(paymentKey) { return .failure(decline) }
            record.paymentKey = paymentKey
            record.totalAmountKRW = order.amountKRW
            record.balanceAmountKRW = order.amountKRW
            record.status = .done
            record.approvedBy = idempotencyKey
            record.charges += 1
            return .success(record.payment)
        }
        if paymentKey.hasPrefix("dev_timeout_") { throw PaymentProviderError.unavailable("timeout") }
        return try outcome.get()
    }

    public func cancel(paymentKey: String, amountKRW: Int64, reason: String, idempotencyKey: String) async throws
        -> ProviderPayment
    {
        let orderID =
            folder == nil
            ? orders.withLockedValue { $0.values.first { $0.paymentKey == paymentKey }?.orderID }
            : storedOrders().first { $0.paymentKey == paymentKey }?.orderID
        guard let orderID else {
            throw PaymentProviderError.declined(code: "NOT_FOUND_PAYMENT", message: "존재하지 않는 결제 정보 입니다.")
        }
        return try update(orderID) { record -> Result<ProviderPayment, PaymentProviderError> in
            if record.cancelKeys.contains(idempotencyKey) { return .success(record.payment) }
            guard record.status == .done || record.status == .partialCanceled else {
                return .failure(.declined(code: "ALREADY_CANCELED_PAYMENT", message: "이미 취소된 결제 입니다."))
            }
            guard amountKRW > 0, amountKRW <= record.balanceAmountKRW else {
                return .failure(
                    .declined(code: "NOT_CANCELABLE_AMOUNT", message: "취소 할 수 없는 금액 입니다."))
            }
            record.balanceAmountKRW -= amountKRW
            record.status = record.balanceAmountKRW == 0 ? .canceled : .partialCanceled
            record.cancelKeys.append(idempotencyKey)
            return .success(record.payment)
        }.get()
    }

    public func query(orderID: String) async throws -> ProviderPayment? {
        let record = try load(orderID)
        return record?.status == nil ? nil : record?.payment
    }

    /// Every order this provider has seen (tests count charges, the probe shows them).
    public func records() -> [DevelopmentPaymentRecord] {
        let records = folder == nil ? Array(orders.withLockedValue { $0 }.values) : storedOrders()
        return records.sorted { $0.orderID < $1.orderID }
    }

    private static func decline(_ paymentKey: String) -> PaymentProviderError? {
        for prefix in ["dev_ok_", "dev_slow_", "dev_timeout_"] where paymentKey.hasPrefix(prefix) { return nil }
        if paymentKey.hasPrefix("dev_insufficient_") {
            return .declined(code: "REJECT_CARD_PAYMENT", message: "한도초과 혹은 잔액부족으로 결제에 실패했습니다.")
        }
        if paymentKey.hasPrefix("dev_expired_") {
            return .declined(code: "INVALID_CARD_EXPIRATION", message: "카드 정보를 다시 확인해주세요. (유효기간)")
        }
        return .declined(code: "NOT_FOUND_PAYMENT_SESSION", message: "결제 시간이 만료되어 결제 진행 데이터가 존재하지 않습니다.")
    }

    /// Changes one order under the lock, then writes its file (atomically) before answering.
    private func update<Answer>(_ orderID: String, _ change: (inout DevelopmentPaymentRecord) -> Answer) throws
        -> Answer
    {
        return try orders.withLockedValue { orders in
            try withFolderLock {
                // Read under the locks: with a folder the file is the truth (another replica may have changed it).
                let stored = try folder == nil ? orders[orderID] : load(orderID)
                var record = stored ?? DevelopmentPaymentRecord(orderID: orderID)
                let answer = change(&record)
                try write(record)
                orders[orderID] = record
                return answer
            }
        }
    }

    /// Runs `body` holding an exclusive `flock` on the folder's `.lock` file: the processes sharing the
    /// folder (a service's replicas) take turns. Held for a file read and an atomic write.
    private func withFolderLock<T>(_ body: () throws -> T) throws -> T {
        guard let folder else { return try body() }
        let descriptor = open(folder.appendingPathComponent(".lock").path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw DevelopmentPaymentFolderError(folder: folder.path, errno: errno) }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else { throw DevelopmentPaymentFolderError(folder: folder.path, errno: errno) }
        }
        return try body()
    }

    private func load(_ orderID: String) throws -> DevelopmentPaymentRecord? {
        guard let file = file(orderID) else { return orders.withLockedValue { $0[orderID] } }
        guard let data = FileManager.default.contents(atPath: file.path) else { return nil }
        return try JSONDecoder().decode(DevelopmentPaymentRecord.self, from: data)
    }

    private func storedOrders() -> [DevelopmentPaymentRecord] {
        guard let folder,
            let files = try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        else { return [] }
        return files.filter { $0.pathExtension == "json" }.compactMap {
            try? JSONDecoder().decode(DevelopmentPaymentRecord.self, from: Data(contentsOf: $0))
        }
    }

    private func write(_ record: DevelopmentPaymentRecord) throws {
        guard let file = file(record.orderID) else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(record).write(to: file, options: .atomic)
    }

    private func file(_ orderID: String) -> URL? {
        let name = orderID.unicodeScalars.map {
            CharacterSet.alphanumerics.contains($0) || $0 == "-" ? Character($0) : "_"
        }
        return folder?.appendingPathComponent(String(name) + ".json")
    }
}

/// The development provider's folder could not be locked.
struct DevelopmentPaymentFolderError: Error, CustomStringConvertible {
    let folder: String
    let errno: Int32
    var description: String { "cannot lock \(folder)/.lock: \(String(cString: strerror(errno)))" }
}

/// One order at the development provider: what it captured, what is left, and how often it was asked.
public struct DevelopmentPaymentRecord: Codable, Sendable, Hashable {
    public var orderID: String
    public var paymentKey: String = ""
    public var status: ProviderPayment.Status?
    public var totalAmountKRW: Int64 = 0
    public var balanceAmountKRW: Int64 = 0
    /// The idempotency key of the confirmation that captured it.
    public var approvedBy: String?
    public var cancelKeys: [String] = []
    /// Confirmations received, and how many of them captured money (never more than one).
    public var confirmCalls = 0
    public var charges = 0

    init(orderID: String) {
        self.orderID = orderID
    }

    var payment: ProviderPayment {
        ProviderPayment(
            paymentKey: paymentKey, orderID: orderID, status: status ?? .ready,
            totalAmountKRW: totalAmountKRW, balanceAmountKRW: balanceAmountKRW)
    }
}
