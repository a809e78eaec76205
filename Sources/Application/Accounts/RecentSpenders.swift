import Subscriptions
import Synchronization

/// The accounts this process took spends from lately, so that only a spend from another account reads its pages
/// ahead (``SpendReadAhead``). An account that spent lately has its pages in memory, and reading them again would cost
/// every repeated spend a round trip for nothing.
///
/// "Lately" is counted in accounts, not in time: the last `capacity` to `2 × capacity` distinct accounts, kept in two
/// generations (when the newer one is full it becomes the older, and the older is dropped). Memory stays bounded
/// whatever the traffic, and no clock is read. Reading ahead matters when spends queue for their group, that is when
/// many accounts spend: then a generation lasts seconds. When few do, an account stays known for longer than its pages
/// may stay in memory, and its group, with no queue behind it, reads them itself.
final class RecentSpenders: Sendable {
    private struct Generations {
        var newer: Set<AccountID> = []
        var older: Set<AccountID> = []
    }

    private let generations = Mutex(Generations())
    private let capacity: Int

    /// - Parameter capacity: accounts a generation holds (at least 1).
    init(capacity: Int = 16_384) {
        self.capacity = max(1, capacity)
    }

    /// Notes a spend from `account`; returns whether it had spent lately (before this spend).
    func noteSpend(from account: AccountID) -> Bool {
        // The dropped generation comes out with the answer and is freed at the end of this statement, outside the
        // lock that every spend takes.
        generations.withLock { generations -> (known: Bool, dropped: Set<AccountID>) in
            if generations.newer.contains(account) { return (true, []) }
            let known = generations.older.contains(account)
            var dropped: Set<AccountID> = []
            if generations.newer.count >= capacity {
                dropped = generations.older
                generations.older = generations.newer
                generations.newer = []
            }
            generations.newer.insert(account)
            return (known, dropped)
        }.known
    }
}
