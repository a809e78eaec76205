import Foundation

/// UTC calendar arithmetic for credit cycles.
public enum CreditCalendar {
    static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    /// Monthly boundary `k` of an annual period anchored at `anchor`: `k` months after the anchor's month, on the
    /// anchor's day clamped to that month's length, at the anchor's UTC time of day. Always computed from the anchor
    /// (Jan 31 → Feb 28/29 → Mar 31), never from the previous boundary.
    public static func monthlyBoundary(anchor: Date, month k: Int) -> Date {
        let parts = utc.dateComponents([.year, .month, .day, .hour, .minute, .second, .nanosecond], from: anchor)
        let monthIndex = parts.year! * 12 + (parts.month! - 1) + k
        var target = DateComponents(year: monthIndex / 12, month: monthIndex % 12 + 1, day: 1)
        let firstOfMonth = utc.date(from: target)!
        let length = utc.range(of: .day, in: .month, for: firstOfMonth)!.count
        target.day = min(parts.day!, length)
        target.hour = parts.hour
        target.minute = parts.minute
        target.second = parts.second
        target.nanosecond = parts.nanosecond
        return utc.date(from: target)!
    }

    /// The monthly window `k` of an annual period `[anchor, end)`: `[B_k, B_k+1)`, the last one ending at Apple's
    /// `end` (trusted over the calendar when they differ).
    public static func monthlyWindow(anchor: Date, end: Date, month k: Int) -> DateInterval {
        let start = monthlyBoundary(anchor: anchor, month: k)
        let next = k >= 11 ? end : min(monthlyBoundary(anchor: anchor, month: k + 1), end)
        return DateInterval(start: min(start, next), end: next)
    }

    /// Which month (0…11) of an annual period `[anchor, end)` contains `now`, or nil outside the period.
    public static func monthIndex(anchor: Date, end: Date, at now: Date) -> Int? {
        guard now >= anchor, now < end else { return nil }
        var k = 0
        while k < 11, monthlyBoundary(anchor: anchor, month: k + 1) <= now { k += 1 }
        return k
    }

    /// The UTC day containing `now`.
    public static func day(containing now: Date) -> DateInterval {
        let start = utc.startOfDay(for: now)
        return DateInterval(start: start, end: utc.date(byAdding: .day, value: 1, to: start)!)
    }

    /// The UTC calendar month containing `now`.
    public static func month(containing now: Date) -> DateInterval {
        utc.dateInterval(of: .month, for: now)!
    }
}
