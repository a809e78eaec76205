import Foundation

/// What a phase made PostgreSQL read: blocks read into its buffer pool per table and index (`pg_statio_*`: each from
/// the operating system's page cache or the disk), and what the whole machine read from the disk (`pgpgin` of
/// `/proc/vmstat`, KiB). The difference over a phase says which relations its requests found cold, and how many of
/// those reads went to the disk.
struct BlockReads {
    var byRelation: [String: Int] = [:]
    var diskKiB = 0

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

    /// The counts once every backend has reported the phase's: PostgreSQL 15's backends report when they go idle, at
    /// most once a second, and one that stays idle reports what it held back 10 s later (`PGSTAT_IDLE_INTERVAL`).
    static func afterPhase(_ system: SystemUnderTest) async throws -> BlockReads {
        try await Task.sleep(for: .seconds(11))
        return try await read(system)
    }

    /// A phase's reads divided by its requests.
    struct PerRequest {
        /// Blocks read into the buffer pool, over every relation.
        var total = 0.0
        /// KiB the machine read from the disk.
        var diskKiB = 0.0
        /// The relations that read most, most first.
        var top: [(name: String, reads: Double)] = []

        var line: String {
            String(format: "%.2f blocks a request (the disk: %.1f KiB a request): ", total, diskKiB)
                + (top.isEmpty ? "none" : top.map { "\($0.name) " + String(format: "%.2f", $0.reads) }.joined(separator: ", "))
        }
    }

    /// What was read from `earlier` to this one, divided by `requests`.
    func perRequest(since earlier: BlockReads, requests: Int) -> PerRequest {
        let count = Double(max(requests, 1))
        let differences = byRelation.map { (name: $0.key, reads: Double($0.value - (earlier.byRelation[$0.key] ?? 0)) / count) }
            .filter { $0.reads > 0 }.sorted { $0.reads > $1.reads }
        return PerRequest(
            total: differences.reduce(0) { $0 + $1.reads }, diskKiB: Double(diskKiB - earlier.diskKiB) / count, top: Array(differences.prefix(8)))
    }

    private static func pagedInKiB() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/vmstat", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("pgpgin ") {
            return Int(line.dropFirst("pgpgin ".count)) ?? 0
        }
        return 0
    }
}
