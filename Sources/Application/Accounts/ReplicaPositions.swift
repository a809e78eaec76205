import Subscriptions

/// Which accounts a streaming replica may answer a status read for: those whose last change it has replayed.
///
/// A change is heard (a NOTIFY, or this process's own commit) once it is committed on the primary, but its WAL
/// position is not in the notification. So a change is first *pending*: any read of its account goes to the primary.
/// A tracker then reads the primary's WAL insert position, which is at or past every commit heard before the read
/// began, and that position becomes what the account requires. A replica whose replay position has reached it may
/// answer. Changes whose accounts are not known (a job's, a lost LISTEN) make every account pending until the next
/// position, which then becomes the requirement of all of them (the *floor*).
///
/// The replica's replay position as the tracker last read it only sorts out the reads not worth trying there: a read
/// checks the position again on its own connection before it reads (``requirement(of:)``), since the tracker's
/// connection may reach another standby behind the same name, or one restarted from an earlier point.
///
/// Positions are WAL byte positions (`pg_lsn` as a number). Pure: the cache holds one under its lock, and
/// `ReplicaPositionTracker` feeds it the positions it reads. Memory is bounded by ``capacity``: past it, accounts are
/// no longer told apart, and all of them wait for the latest position.
public struct ReplicaPositions: Sendable {
    /// A round of the tracker: changes heard up to it are covered by the primary position read after it began.
    public typealias Round = UInt64

    /// The replay position of the server a connection reaches, as a byte count; NULL when it is not a standby in
    /// recovery (a promoted standby keeps reporting the last position it replayed).
    public static let replayedPositionSQL = "SELECT CASE WHEN pg_is_in_recovery() THEN (pg_last_wal_replay_lsn() - '0/0')::bigint END"

    /// Accounts changed since the last position was read, with the round they were heard in.
    private var pending: [AccountID: Round] = [:]
    /// The round of the latest change whose accounts are not known; `nil`: none pending.
    private var everythingChangedIn: Round? = 0
    private var round: Round = 0
    /// What every account requires at least: the primary position read after the latest change of unknown accounts,
    /// or a later one the replica has reached since (a dropped requirement's); `nil` before the first.
    private var floor: UInt64?
    /// Accounts whose change requires more than the floor, with the position each requires.
    private var requirements: [AccountID: UInt64] = [:]
    /// The same requirements in the order they were set (positions only grow), so those the replica has reached are
    /// dropped from the front.
    private var settled: [(position: UInt64, accounts: [AccountID])] = []
    private var settledStart = 0
    /// Accounts in `settled` from `settledStart` on.
    private var settledCount = 0
    /// The replica's replay position as last read.
    public private(set) var replayed: UInt64 = 0
    /// Whether the last attempt to read the replica's position succeeded: a replica that cannot be reached, or that
    /// is no longer in recovery, answers nothing.
    public private(set) var isAvailable = false
    /// Requirements kept at most; past it every account requires the latest position (the floor moves up).
    let capacity: Int

    public init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    /// `account` changed on the primary (committed).
    public mutating func changed(_ account: AccountID) {
        // While no position can be read (the primary unreachable), changes are not kept one by one without end: a
        // change of every account in this round stands for this one too.
        guard pending[account] != nil || pending.count < capacity else { return changedEverything() }
        pending[account] = round
    }

    /// Accounts not known changed on the primary: every account waits for the next position.
    public mutating func changedEverything() {
        everythingChangedIn = round
        pending.removeAll(keepingCapacity: true)
    }

    /// Whether a position must be read: changes are waiting for one.
    public var hasPending: Bool { everythingChangedIn != nil || !pending.isEmpty }

    /// Starts a round: the primary position read after this covers every change heard before it.
    public mutating func beginRound() -> Round {
        round += 1
        return round - 1
    }

    /// The primary's insert position, read after round `covered` began: the changes heard up to that round require it.
    public mutating func primaryPosition(_ position: UInt64, covering covered: Round) {
        if let everything = everythingChangedIn, everything <= covered {
            everythingChangedIn = nil
            raiseFloor(to: position)
        }
        var accounts: [AccountID] = []
        for (account, heard) in pending where heard <= covered { accounts.append(account) }
        guard !accounts.isEmpty else { return }
        for account in accounts {
            pending[account] = nil
            requirements[account] = position
        }
        settled.append((position, accounts))
        settledCount += accounts.count
        // A replica that stays behind (paused, cut off) would otherwise keep every round's accounts.
        if settledCount > capacity { raiseFloor(to: position) }
        drop()
    }

    /// Every account requires `position` at least; the requirements below it go.
    private mutating func raiseFloor(to position: UInt64) {
        floor = max(floor ?? 0, position)
        requirements.removeAll(keepingCapacity: true)
        settled.removeAll(keepingCapacity: true)
        settledStart = 0
        settledCount = 0
    }

    /// The replica's replay position, as just read.
    public mutating func replicaReplayed(_ position: UInt64) {
        isAvailable = true
        guard position >= replayed else {
            // A standby restarted from an earlier restart point (or one rebuilt) shows the primary as of an earlier
            // moment than before: what was known to be replayed no longer is. Every account waits for a new floor.
            replayed = position
            changedEverything()
            return
        }
        replayed = position
        drop()
    }

    /// The replica's position could not be read (or it was promoted): reads go to the primary until it can.
    public mutating func replicaUnavailable() {
        isAvailable = false
    }

    /// The replay position a replica must have reached to show every change of `account` heard so far; `nil` when
    /// that is not known yet (a change is pending), or when the replica, as last read, is not there or not reachable.
    public func requirement(of account: AccountID) -> UInt64? {
        guard isAvailable, everythingChangedIn == nil, let floor, pending[account] == nil else { return nil }
        let required = max(floor, requirements[account] ?? 0)
        return required <= replayed ? required : nil
    }

    /// Forgets the requirements the replica has reached: the floor, raised to them, answers for those accounts now.
    /// Raised, not left below: a read checks the floor against the position of the server its own connection reached,
    /// which may be another standby, or this one restarted from an earlier point.
    private mutating func drop() {
        while settledStart < settled.count, settled[settledStart].position <= replayed {
            let (position, accounts) = settled[settledStart]
            floor = max(floor ?? 0, position)
            for account in accounts where requirements[account] == position { requirements[account] = nil }
            settledCount -= accounts.count
            settledStart += 1
        }
        if settledStart > 64, settledStart * 2 > settled.count {
            settled.removeFirst(settledStart)
            settledStart = 0
        }
    }
}
