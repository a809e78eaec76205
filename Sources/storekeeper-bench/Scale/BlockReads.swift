import Foundation

/// What PostgreSQL read during a phase: blocks read into its buffer pool per table and index (`pg_statio_*`: each from
/// the operating system's page cache or the disk), and what the whole machine read from the disk (`pgpgin` of
/// `/proc/vmstat`, KiB). The difference over a phase says which relations its requests found cold, and how many of
/// those reads went to the disk. It counts the whole database's reads, `work`'s jobs and autovacuum included, and the
/// whole machine's disk: per request, it is an upper bound.
struct BlockReads {
    var byRelation: [String: Int] = [:]
    /// `nil` where `/proc/vmstat` cannot be read.
    var diskKiB: Int?

    /// Reads every count now.
    static func read(_ system: SystemUnderTest) async throws -> BlockReads {
        let listed = try await system.text(
            """
            SELECT coalesce(string_agg(name || '=' || reads, ','), '') FROM (
                SELECT relname AS name, heap_blks_read + coalesce(toast_blks_read, 0) + coalesce(tidx_blks_read, 0) AS reads
                FROM pg_statio_user_tables
                UNION ALL
                SELECT indexrelname, idx_blks_read FROM pg_statio_user_indexes) AS counted
            WHERE reads > 0
            """)
        var reads = BlockReads()
        for entry in listed.split(separator: ",") {
            let parts = entry.split(separator: "=")
            if parts.count == 2, let count = Int(parts[1]) { reads.byRelation[String(parts[0])] = count }
        }
        reads.diskKiB = Self.pagedInKiB()
        return reads
    }

    /// The counts once every backend has reported what it read: PostgreSQL 15's backends report when they go idle, at
    /// most once a second, and one that stays idle reports what it held back 10 s later (`PGSTAT_IDLE_INTERVAL`).
    static func settled(_ system: SystemUnderTest) async throws -> BlockReads {
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

        var line: String {
            String(format: "%.2f blocks of 8 KiB a request (the machine's disk: ", total)
                + (diskKiB.map { String(format: "%.1f KiB a request", $0) } ?? "not known") + "): "
                + (top.isEmpty ? "none" : top.map { "\($0.name) " + String(format: "%.2f", $0.reads) }.joined(separator: ", "))
        }
    }

    /// What was read from `earlier` to this one, divided by `requests`.
    func perRequest(since earlier: BlockReads, requests: Int) -> PerRequest {
        let count = Double(max(requests, 1))
        let differences = byRelation.map { (name: $0.key, reads: Double($0.value - (earlier.byRelation[$0.key] ?? 0)) / count) }
            .filter { $0.reads > 0 }.sorted { $0.reads > $1.reads }
        let disk = diskKiB.flatMap { now in earlier.diskKiB.map { Double(now - $0) / count } }
        return PerRequest(total: differences.reduce(0) { $0 + $1.reads }, diskKiB: disk, top: Array(differences.prefix(8)))
    }

    private static func pagedInKiB() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/vmstat", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("pgpgin ") {
            return Int(line.dropFirst("pgpgin ".count))
        }
        return nil
    }
}
