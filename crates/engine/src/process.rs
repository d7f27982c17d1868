//! Settings that belong to the whole process, not to one engine. The library never changes them
//! on its own: binaries (the CLI, the app) and test harnesses apply them once, at start-up.

/// Sets the number of CPU threads the engine computes with. Call once, before loading a model.
pub fn set_threads(n: usize) {
    let n = n.max(1);
    // candle sizes its work split from RAYON_NUM_THREADS; rayon's pool must match it.
    std::env::set_var("RAYON_NUM_THREADS", n.to_string());
    let _ = rayon::ThreadPoolBuilder::new().num_threads(n).build_global();
}

/// Keeps the memory of freed step buffers in the heap instead of handing it back to the kernel.
///
/// A step allocates activations of up to a few tens of MB (a 512-token prompt chunk times the
/// 8960-wide feed-forward layer is 18 MB) and frees them within milliseconds. glibc's defaults
/// hand such blocks back to the kernel, by `munmap` or by trimming the heap, so every step
/// page-faulted them in again, zeroed: about a tenth of prompt time went to the kernel. Kept
/// in the heap, they are reused. The setting is process-wide, and harmless for the rest of a
/// program (freed memory is still reused, just not returned early). Elsewhere than glibc it
/// does nothing.
pub fn keep_freed_step_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only changes allocator thresholds; 32 MiB is glibc's largest mmap
    // threshold on 64-bit systems.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}
