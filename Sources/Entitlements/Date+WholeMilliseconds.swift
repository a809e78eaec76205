import Foundation

extension Date {
    /// This time to the nearest millisecond, for store times read back from PostgreSQL (and Play's, as parsed). The App Store's times are
    /// whole milliseconds, PostgreSQL keeps microseconds, and a `Date` of milliseconds is stored truncated to the
    /// microsecond below (1798172874.363 becomes …874.362999): read back as it is, a subscription or a credit window
    /// would differ from the same one derived again, and every re-derivation would save it and emit a change event.
    public var wholeMilliseconds: Date { Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded() / 1000) }
}
