#if canImport(Glibc)
    import Glibc
#endif

/// glibc's allocator, set for a long-running process that frees a request's buffers as fast as it takes them.
public enum AllocatorSettings {
    /// By default glibc gives the top of a thread's heap back to the kernel (`madvise`) whenever more than 128 KiB
    /// there are free — after nearly every request of ≈ 19 KB signed notifications — and the next request faults the
    /// pages in again, zero-filled: 7 % of `serve`'s CPU and 4 % of `work`'s in their profiles (docs/capacity.md).
    /// Freed memory is kept unless 256 MiB of it lies at a heap's top, and allocations below 16 MiB come from the heap
    /// (setting either threshold fixes the other, which glibc otherwise adjusts as it goes). Resident memory stays
    /// at the process's peak instead of falling back after it.
    /// Returns whether glibc took both settings (false elsewhere).
    @discardableResult
    public static func keepFreedMemory() -> Bool {
        #if canImport(Glibc)
            // `mallopt` is declared in <malloc.h>, which the Glibc module does not export.
            guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "mallopt") else { return false }
            let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
            let mmapThreshold: Int32 = -3
            let trimThreshold: Int32 = -1  // M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
            return mallopt(mmapThreshold, 16 << 20) == 1 && mallopt(trimThreshold, 256 << 20) == 1
        #else
            return false
        #endif
    }
}
