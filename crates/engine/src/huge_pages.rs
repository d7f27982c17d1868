//! Buffers for data the CPU streams through on every token (the packed weights), backed on
//! Linux by transparent huge pages: 2 MiB pages instead of 4 KiB.
//!
//! Why: a decoding step reads every weight once, about 1 GB for the 1.5B model, so its speed is
//! the memory bandwidth. With 4 KiB pages, the hardware prefetcher stops at every page boundary
//! and each page needs its own translation. On the machine Ponder is tuned on, two threads
//! reading 512 MiB with AVX-512 loads got 24–27 GB/s from 4 KiB pages and 30–33 GB/s from huge
//! pages.
//!
//! Linux gives a mapping huge pages only where it is asked to (`madvise`, the default setting of
//! `/sys/kernel/mm/transparent_hugepage/enabled` on most distributions), and only for 2 MiB
//! ranges that are aligned and wholly inside the mapping. So a large buffer gets a mapping of
//! its own, aligned to 2 MiB, marked before its first write; a small one stays on the heap.
//! Where huge pages are off or unknown (other systems), the buffer is plain memory: nothing
//! changes but the speed.
//!
//! Every buffer here starts on a cache line, a small one too ([`AlignedBytes`]): the kernels read
//! 64 bytes at a time, and a load across two lines costs two. The heap alone gives 16 bytes.

use std::ops::{Deref, DerefMut};

/// The huge page size on x86-64 and most arm64 Linux systems.
const HUGE_PAGE: usize = 2 << 20;

/// A zeroed byte buffer of fixed length.
pub struct HugeBuffer {
    inner: Inner,
}

enum Inner {
    Heap(AlignedBytes),
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    Mapped(Mapping),
}

impl HugeBuffer {
    /// `len` zero bytes: in a mapping of their own on huge pages from [`HUGE_PAGE`] on (on
    /// Linux), else on the heap, from a cache line's start.
    pub fn zeroed(len: usize) -> Self {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        if len >= HUGE_PAGE {
            if let Some(m) = Mapping::new(len) {
                return Self { inner: Inner::Mapped(m) };
            }
        }
        Self { inner: Inner::Heap(AlignedBytes::zeroed(len)) }
    }
}

/// Bytes on the heap that start on a cache line (64 bytes).
#[derive(Default)]
pub struct AlignedBytes {
    lines: Vec<CacheLine>,
    len: usize,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct CacheLine([u8; 64]);

impl AlignedBytes {
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Self {
        let mut b = Self::default();
        b.resize(len);
        b
    }

    /// Makes the buffer `len` bytes long; bytes it gains are zero.
    pub fn resize(&mut self, len: usize) {
        let old = self.len;
        self.lines.resize(len.div_ceil(64), CacheLine([0; 64]));
        self.len = len;
        // New lines come zeroed; the rest of the old last line may hold bytes from before a shrink.
        let end = len.min(old.next_multiple_of(64));
        if end > old {
            self[old..end].fill(0);
        }
    }
}

impl Deref for AlignedBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: the lines are `len.div_ceil(64)` initialized arrays of 64 bytes, contiguous and
        // without padding (`repr(C)`, size 64), so their first `len` bytes are readable.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr() as *const u8, self.len) }
    }
}

impl DerefMut for AlignedBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes this borrow the only one.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr() as *mut u8, self.len) }
    }
}

impl Deref for HugeBuffer {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.inner {
            Inner::Heap(v) => v,
            #[cfg(all(target_os = "linux", target_env = "gnu"))]
            // SAFETY: the mapping holds `len` readable bytes for as long as it lives.
            Inner::Mapped(m) => unsafe { std::slice::from_raw_parts(m.start, m.len) },
        }
    }
}

impl DerefMut for HugeBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        match &mut self.inner {
            Inner::Heap(v) => v,
            #[cfg(all(target_os = "linux", target_env = "gnu"))]
            // SAFETY: the mapping holds `len` writable bytes, and `&mut self` makes this borrow the only one.
            Inner::Mapped(m) => unsafe { std::slice::from_raw_parts_mut(m.start, m.len) },
        }
    }
}

impl std::fmt::Debug for HugeBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.inner {
            Inner::Heap(_) => "heap",
            #[cfg(all(target_os = "linux", target_env = "gnu"))]
            Inner::Mapped(_) => "huge pages",
        };
        write!(f, "HugeBuffer({} bytes, {kind})", self.len())
    }
}

/// An anonymous private mapping whose start is aligned to [`HUGE_PAGE`], marked for huge pages.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
struct Mapping {
    start: *mut u8,
    len: usize,
    /// The bytes mapped from `start`: `len` rounded up to whole pages.
    mapped: usize,
}

// SAFETY: the mapping is plain memory owned by this value; shared access is read-only (`Deref`)
// and writes need `&mut` (`DerefMut`), as for a `Vec<u8>`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe impl Send for Mapping {}
// SAFETY: as above.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe impl Sync for Mapping {}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
impl Mapping {
    /// `None` if the system refuses the mapping (the caller then uses the heap).
    fn new(len: usize) -> Option<Self> {
        // SAFETY: `sysconf` only reads a system setting.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok().filter(|p| p.is_power_of_two())?;
        let mapped = len.next_multiple_of(page);
        // Room to slide the start to the next 2 MiB boundary; the slack is unmapped below.
        let reserve = mapped + HUGE_PAGE;
        // SAFETY: a fresh anonymous mapping, at an address the kernel picks; nothing else is touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                reserve,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let base = base as usize;
        let start = base.next_multiple_of(HUGE_PAGE);
        let (head, tail) = (start - base, base + reserve - (start + mapped));
        // SAFETY: both ranges lie inside the mapping made above, are page-aligned (`base`,
        // `start` and `mapped` are), and no one has used them. A failure leaves them mapped
        // but unused: virtual room only, harmless.
        unsafe {
            if head > 0 {
                libc::munmap(base as *mut libc::c_void, head);
            }
            if tail > 0 {
                libc::munmap((start + mapped) as *mut libc::c_void, tail);
            }
            // Before the first write, so the first touch of each 2 MiB range faults in a huge
            // page. Refused when huge pages are off: then the mapping is ordinary memory.
            libc::madvise(start as *mut libc::c_void, mapped, libc::MADV_HUGEPAGE);
        }
        Some(Self { start: start as *mut u8, len, mapped })
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the range is the one mapped in `new`, and no slice of it outlives `self`.
        unsafe {
            libc::munmap(self.start as *mut libc::c_void, self.mapped);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_zeroed_writable_and_as_long_as_asked() {
        for len in [0, 1, 4095, HUGE_PAGE - 1, HUGE_PAGE, 3 * HUGE_PAGE + 12_345] {
            let mut b = HugeBuffer::zeroed(len);
            assert_eq!(b.len(), len);
            assert!(b.iter().all(|&x| x == 0));
            for (i, x) in b.iter_mut().enumerate() {
                *x = (i % 251) as u8;
            }
            assert!(b.iter().enumerate().all(|(i, &x)| x == (i % 251) as u8));
        }
    }

    #[test]
    fn small_buffers_start_on_a_cache_line_and_grow_zeroed() {
        for len in [1, 63, 65, 4095, HUGE_PAGE - 1] {
            let b = HugeBuffer::zeroed(len);
            assert!(matches!(b.inner, Inner::Heap(_)), "{b:?}");
            assert_eq!(b.as_ptr() as usize % 64, 0, "{len} bytes");
        }
        let mut a = AlignedBytes::zeroed(10);
        a.fill(7);
        a.resize(200);
        assert_eq!(a.as_ptr() as usize % 64, 0);
        assert_eq!((a.len(), &a[..10], &a[10..]), (200, &[7u8; 10][..], &[0u8; 190][..]));
        a.resize(3);
        a.resize(12);
        assert_eq!(&a[..], &[7, 7, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0][..]);
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn large_buffers_start_on_a_huge_page_boundary() {
        let b = HugeBuffer::zeroed(HUGE_PAGE + 1);
        assert!(matches!(b.inner, Inner::Mapped(_)), "{b:?}");
        assert_eq!(b.as_ptr() as usize % HUGE_PAGE, 0);
        assert!(matches!(HugeBuffer::zeroed(HUGE_PAGE - 1).inner, Inner::Heap(_)));
    }
}
