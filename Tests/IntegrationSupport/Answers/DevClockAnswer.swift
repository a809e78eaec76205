/// `GET /admin/dev/clock` and `POST /admin/dev/clock` (`storekeeper dev` only): the dev clock's now (openapi `DevClock`).
struct DevClockAnswer: Decodable, Sendable {
    var now: String
    /// `now` to the millisecond.
    var nowMilliseconds: Int64
}
