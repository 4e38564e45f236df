/// The style catalogue the app shipped: a new designer's menu until they edit it. Durations are the
/// usual times of each treatment (the app had none).
enum DefaultMenu {
    static let catalogue: [(name: String, category: Int, priceKRW: Int64, minutes: Int)] = [
        ("레이어드컷", 1, 45_000, 60), ("허쉬컷", 1, 46_000, 60), ("가일컷", 1, 48_000, 60), ("원랭스컷", 1, 49_000, 60),
        ("애즈펌", 2, 85_000, 120), ("리프펌", 2, 86_000, 120), ("포마드펌", 2, 80_000, 90), ("가르마펌", 2, 85_000, 120),
        ("쉐도우펌", 2, 92_000, 120),
        ("뿌리염색", 3, 85_000, 90), ("전체염색", 3, 115_000, 150), ("부분염색", 3, 95_000, 120),
    ]

    static func styles(newID: () -> String) -> [StyleRecord] {
        catalogue.map {
            StyleRecord(
                id: newID(), name: $0.name, category: $0.category, priceKRW: $0.priceKRW, durationMinutes: $0.minutes)
        }
    }
}
