import Foundation

/// What PostgreSQL read and wrote during a phase: blocks read into its buffer pool per table and index (`pg_statio_*`:
/// each from the operating system's page cache or the disk), what the whole machine read from the disk (`pgpgin` of
/// `/proc/vmstat`, KiB), and the WAL written with its full-page images (`pg_stat_wal`: the first change of a page
/// after a checkpoint logs the whole page). The difference over a phase says which relations its requests found cold,
/// how many of those reads went to the disk, and what touching cold pages cost in WAL. It counts the whole database,
/// `work`'s jobs and autovacuum included, and the whole machine's disk: per request, it is an upper bound.
struct PhaseIO {
    var byRelation: [String: Int] = [:]
    /// `nil` where `/proc/vmstat` cannot be read.
    var diskKiB: Int?
    /// The cluster's WAL so far, and the whole pages logged in it.
    var walBytes = 0
    var fullPageImages = 0

    /// Reads every count now.
    static func read(_ system: SystemUnderTest) async throws -> PhaseIO {
        let listed = try await system.text(
            """
            SELECT coalesce(string_agg(name || '=' || reads, ','), '') FROM (
                SELECT relname AS name, heap_blks_read + coalesce(toast_blks_read, 0) + coalesce(tidx_blks_read, 0) AS reads
                FROM pg_statio_user_tables
                UNION ALL
                SELECT indexrelname, idx_blks_read FROM pg_statio_user_indexes) AS counted
            WHERE reads > 0
            """)
        var reads = PhaseIO()
        for entry in listed.split(separator: ",") {
            let parts = entry.split(separator: "=")
            if parts.count == 2, let count = Int(parts[1]) { reads.byRelation[String(parts[0])] = count }
        }
        reads.diskKiB = Self.pagedInKiB()
        let wal = try await system.text("SELECT wal_bytes::bigint || ',' || wal_fpi FROM pg_stat_wal").split(separator: ",")
        if wal.count == 2 { (reads.walBytes, reads.fullPageImages) = (Int(wal[0]) ?? 0, Int(wal[1]) ?? 0) }
        return reads
    }

    /// The counts once every backend has reported what it read: PostgreSQL 15's backends report when they go idle, at
    /// most once a second, and one that stays idle reports what it held back 10 s later (`PGSTAT_IDLE_INTERVAL`).
    static func settled(_ system: SystemUnderTest) async throws -> PhaseIO {
        try await Task.sleep(for: .seconds(11))
        return try await read(system)
    }

    /// A phase's reads divided by its requests.
    struct PerRequest {
        /// Blocks read into the buffer pool, over every relation.
        var total = 0.0
        /// KiB the machine read from the disk; `nil`: not known.
        var diskKiB: Double?
        /// The relations that read most, most first.
        var top: [(name: String, reads: Double)] = []
        /// WAL written, and the whole pages logged in it.
        var walKiB = 0.0
        var fullPageImages = 0.0

        var line: String {
            String(format: "%.2f blocks of 8 KiB read a request (the machine's disk: ", total)
                + (diskKiB.map { String(format: "%.1f KiB a request", $0) } ?? "not known")
                + String(format: "; WAL %.1f KiB, %.2f full-page images a request): ", walKiB, fullPageImages)
                + (top.isEmpty ? "none" : top.map { "\($0.name) " + String(format: "%.2f", $0.reads) }.joined(separator: ", "))
        }
    }

    /// What was read from `earlier` to this one, divided by `requests`.
    func perRequest(since earlier: PhaseIO, requests: Int) -> PerRequest {
        let count = Double(max(requests, 1))
        let differences = byRelation.map { (name: $0.key, reads: Double($0.value - (earlier.byRelation[$0.key] ?? 0)) / count) }
            .filter { $0.reads > 0 }.sorted { $0.reads > $1.reads }
        let disk = diskKiB.flatMap { now in earlier.diskKiB.map { Double(now - $0) / count } }
        return PerRequest(
            total: differences.reduce(0) { $0 + $1.reads }, diskKiB: disk, top: Array(differences.prefix(8)),
            walKiB: Double(walBytes - earlier.walBytes) / 1024 / count, fullPageImages: Double(fullPageImages - earlier.fullPageImages) / count)
    }

    private static func pagedInKiB() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/vmstat", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("pgpgin ") {
            return Int(line.dropFirst("pgpgin ".count))
        }
        return nil
    }
}
