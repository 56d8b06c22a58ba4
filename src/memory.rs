//! Giving freed memory back to the system. glibc's allocator keeps what is freed in the middle of
//! its heaps (and, after one large block was freed, even at their top) for later allocations, so
//! a process stays resident at its high-water mark long after the memory is free: building the
//! routes and their API document at start leaves ~7 MiB of holes, and each password-hashing
//! thread's 19 MiB of Argon2 memory stayed for the life of the process (BENCHMARKS.md, "idle
//! memory"). `malloc_trim(0)` walks every arena and returns free pages with `madvise`. It locks
//! each arena in turn, so it is called only at quiet points: once the service is up, and by a
//! hashing thread that has had no work for a while, after dropping its memory.
//!
//! The one `unsafe` of the crate: no crate offers this call safely, and it has no precondition.

/// Returns the allocator's free pages to the system (glibc); elsewhere there is nothing to do.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn release_free_memory() {
    // SAFETY: `malloc_trim` takes any pad and only reorganises the allocator's own free memory.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_free_memory() {}
