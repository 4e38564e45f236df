import AccessTokens
import BenchSupport
import Foundation
import GRDB
import Histogram
import RPCCore
import YediProto

/// The payment part of `booking-bench`: ConfirmPayment against the development provider, which answers
/// at once, so the figure is the service's own cost (two write transactions, the ledger pair, the
/// scheduler's jobs) over TLS.
extension BookingBench {
    /// `payments` reservations of the payment designer, one hour each from tomorrow on, owned round-robin
    /// by the `paymentClients` bench customers.
    func seedPayable(_ rows: inout SeedBatch, from midnight: Int64) {
        let starts = Self.slotStarts(from: midnight, days: 360)
        let styles = #"[{"id":"style-p","name":"레이어드컷","category":1,"priceKRW":45000,"durationMinutes":60}]"#
        for (index, start) in starts.prefix(payments).enumerated() {
            rows.add(
                """
                INSERT INTO reservation (id, customer_id, designer_id, start_at_ms, end_at_ms, time_zone, styles,
                    total_price_krw, status, created_at_ms) VALUES (?, ?, ?, ?, ?, 'Asia/Seoul', ?, 45000,
                    'confirmed', 0)
                """,
                [
                    .text("pay-\(index)"), .text("bench-payer-\(index % paymentClients)"), .text(Self.paymentDesigner),
                    .integer(start), .integer(start + 3_600_000), .text(styles),
                ])
        }
    }

    /// Prepares every seeded reservation (not timed), then confirms them, each customer on its own TLS
    /// connection, all customers at once.
    func confirmPayments(_ processes: [ServiceProcess], issuer: AccessTokenIssuer) async throws {
        let options = try (0..<paymentClients).map { try Self.customer("bench-payer-\($0)", issuer: issuer) }
        let clients = try (0..<paymentClients).map {
            try RPCClient(configuration: processes[$0 % processes.count].clientConfiguration())
        }
        let tasks = clients.map { client in Task { await client.run() } }
        var prepared: [[YediBooking.Payment]] = Array(repeating: [], count: paymentClients)
        for index in 0..<payments {
            let owner = index % paymentClients
            prepared[owner].append(
                try await YediBooking.BookingService.Client(clients[owner]).preparePayment(
                    .init(reservationID: "pay-\(index)"), options: options[owner]))
        }
        let started = ContinuousClock.now
        let histogram = try await withThrowingTaskGroup(of: Histogram<UInt64>.self) { group in
            for owner in 0..<paymentClients {
                let booking = YediBooking.BookingService.Client(clients[owner])
                let (mine, callOptions) = (prepared[owner], options[owner])
                group.addTask {
                    var histogram = Figures.newHistogram()
                    for payment in mine {
                        let callStart = ContinuousClock.now
                        let paid = try await booking.confirmPayment(
                            .init(orderID: payment.orderID, paymentKey: "dev_ok_bench", amountKRW: payment.amountKRW),
                            options: callOptions)
                        histogram.record(Figures.nanoseconds(ContinuousClock.now - callStart))
                        guard paid.status == .paid else { throw BenchError("\(payment.id) is \(paid.status)") }
                    }
                    return histogram
                }
            }
            var merged = Figures.newHistogram()
            for try await histogram in group { merged.add(histogram) }
            return merged
        }
        let elapsed = Figures.seconds(ContinuousClock.now - started)
        print(
            #"{"bench":"confirm-payment",\#(engineFields)"provider":"development","clients":\#(paymentClients),"#
                + #""payments":\#(histogram.totalCount),"#
                + #""confirmed_per_second":\#(Figures.format(Double(histogram.totalCount) / elapsed)),"#
                + #""p50_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(50))),"#
                + #""p99_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(99))),"tls":true}"#)
        for client in clients { client.beginGracefulShutdown() }
        for task in tasks { await task.value }
    }
}
