//! The weights' layout for the AVX-512 and AVX2 kernels: sixteen weight rows interleaved per
//! super-block, so one 64-byte load holds four bytes of each of the sixteen rows and one
//! `vpdpbusd` multiplies them with four broadcast activations: sixteen outputs at once, with
//! no horizontal sums (AVX2 takes each half line, eight rows, with `vpmaddubsw`). The bytes are
//! the file's own, moved: a packed matrix is as large as the GGUF tensor (plus a few bytes for
//! Q4_K's decoded scales, and 1 % of padding for Q6_K), and the original rows can be read back
//! from it (for embedding lookups).
//!
//! Every packed super-block starts on a cache line, as the buffer does (64 bytes): a load across
//! two lines costs two. Q6_K's 3,360 bytes are padded to 3,392 for that: with one group of weights
//! in the first-level cache, its kernel ran 4 % faster (median of 15 interleaved timings).
//!
//! Per super-block of sixteen rows `r`:
//! - Q4_K (2368 bytes): `qs[(32 c + 4 g + b)]` of row `r` at `64 (8 c + g) + 4 r + b`
//!   (2048 bytes); scale `s` of row `r` at `2048 + 16 s + r`; minimums `2p, 2p+1` of row `r`
//!   at `2176 + 32 p + 2 r (+1)` (ready for `vpmovzxbw` then `vpdpwssd`); `d` and `dmin` as
//!   sixteen f16 each at 2304 and 2336.
//! - Q6_K (3392 bytes, the last 32 unused): `ql` dword `q` of row `r` at `64 q + 4 r`
//!   (2048 bytes); `qh` dword `q` at `2048 + 64 q + 4 r` (1024 bytes); scale `s` of row `r` at
//!   `3072 + 16 s + r`; `d` as sixteen f16 at 3328.

use super::{scale_min_k4, Format, Q8K};
use crate::huge_pages::HugeBuffer;
use rayon::prelude::*;

/// Weight rows per packed group.
pub const ROWS: usize = 16;
/// Activation rows per call of a packed kernel: four rows' sums fill the registers.
pub const MAX_ROWS: usize = 4;
pub const Q4K_PACKED: usize = 2368;
pub const Q6K_PACKED: usize = 3392;

pub fn packed_bytes(format: Format) -> usize {
    match format {
        Format::Q4K => Q4K_PACKED,
        Format::Q6K => Q6K_PACKED,
    }
}

/// The `(n, k)` matrix `w` (GGUF blocks, row-major) in the packed layout; `n` must be a
/// multiple of [`ROWS`]. Groups of sixteen rows follow each other, each with its super-blocks in
/// order. Large matrices go on huge pages (see [`crate::huge_pages`]): every token reads them.
pub fn pack(format: Format, w: &[u8], n: usize, blocks: usize) -> HugeBuffer {
    assert!(n.is_multiple_of(ROWS) && w.len() == n * blocks * format.block_bytes());
    let (src, dst) = (format.block_bytes(), packed_bytes(format));
    let mut out = HugeBuffer::zeroed(n / ROWS * blocks * dst);
    // On every core: a model's worth of packing is a good part of its load time.
    out.par_chunks_exact_mut(blocks * dst).enumerate().for_each(|(gi, group)| {
        for (i, p) in group.chunks_exact_mut(dst).enumerate() {
            for r in 0..ROWS {
                let at = ((gi * ROWS + r) * blocks + i) * src;
                let b = &w[at..at + src];
                match format {
                    Format::Q4K => pack_q4k(b, r, p),
                    Format::Q6K => pack_q6k(b, r, p),
                }
            }
        }
    });
    out
}

fn pack_q4k(b: &[u8], r: usize, p: &mut [u8]) {
    for q in 0..32 {
        p[64 * q + 4 * r..64 * q + 4 * r + 4].copy_from_slice(&b[16 + 4 * q..20 + 4 * q]);
    }
    let scales: &[u8; 12] = b[4..16].try_into().unwrap();
    for s in 0..8 {
        let (sc, m) = scale_min_k4(s, scales);
        p[2048 + 16 * s + r] = sc;
        p[2176 + 32 * (s / 2) + 2 * r + s % 2] = m;
    }
    p[2304 + 2 * r..2306 + 2 * r].copy_from_slice(&b[0..2]);
    p[2336 + 2 * r..2338 + 2 * r].copy_from_slice(&b[2..4]);
}

fn pack_q6k(b: &[u8], r: usize, p: &mut [u8]) {
    for q in 0..48 {
        // ql's 32 dwords, then qh's 16: the same place in the packed block.
        p[64 * q + 4 * r..64 * q + 4 * r + 4].copy_from_slice(&b[4 * q..4 * q + 4]);
    }
    for s in 0..16 {
        p[3072 + 16 * s + r] = b[192 + s];
    }
    p[3328 + 2 * r..3330 + 2 * r].copy_from_slice(&b[208..210]);
}

/// How far ahead of its loads a kernel asks for the weights, in bytes (four Q4_K super-blocks
/// of sixteen rows, about three of Q6_K), and into L2. Two cases need it:
/// - several activation rows: the kernels then compute longer than memory takes to deliver a
///   block, and with the hardware prefetcher alone the two waited on each other;
/// - Q6_K, whose loads jump between its low-bit, high-bit and scale regions: the hardware
///   prefetcher does not follow them, and one row read its weights at 2/3 of the bandwidth.
///
/// One row of Q4_K, read in order, is faster without on AVX-512 (the prefetches only cost issue
/// slots); the AVX2 kernel, which reads each line in two halves, needs them (see its comment).
/// Into L1 instead of L2 was slower for one row. Measured with criterion's `of 28 layers` and
/// `output projection` groups (figures in the closing note of issue #3).
#[cfg(target_arch = "x86_64")]
const PREFETCH_AHEAD: usize = 4 * Q4K_PACKED;

/// Asks for the cache line `at + PREFETCH_AHEAD` bytes past `p`, which may lie past the end
/// of the weights (a prefetch never faults).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) unsafe fn prefetch(p: *const u8, at: usize) {
    // SAFETY: a prefetch never faults, whatever the address; the caller runs on a CPU with SSE.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(p.wrapping_add(PREFETCH_AHEAD + at) as *const i8);
    }
}

/// One activation row as the packed kernels read it ([`super::avx512`], [`super::avx2`]): its
/// blocks, and per block the sums that the formats' offsets multiply.
pub struct ActRow<'a> {
    pub(super) q8: &'a [Q8K],
    /// Q4_K: per block, four i32 that each hold the sums of 32 values of sub-blocks 2p and
    /// 2p + 1 as two i16 (they fit: 32 × 128), for a multiply-add of pairs with the minimums.
    pub(super) pairs: Vec<i32>,
    /// Q6_K: per block, 32 × the sum of each 16 values (the stored values are q + 32).
    pub(super) offsets: Vec<i32>,
}

impl<'a> ActRow<'a> {
    /// The row's sums for both formats (a fused product can hold matrices of each).
    pub fn new(q8: &'a [Q8K]) -> Self {
        let (mut pairs, mut offsets) = (Vec::with_capacity(4 * q8.len()), Vec::with_capacity(16 * q8.len()));
        for b in q8 {
            let sum32 = |s: usize| (b.bsums[2 * s] + b.bsums[2 * s + 1]) as u16 as i32;
            pairs.extend((0..4).map(|p| sum32(2 * p) | (sum32(2 * p + 1) << 16)));
            offsets.extend(b.bsums.iter().map(|&s| 32 * s as i32));
        }
        Self { q8, pairs, offsets }
    }
}

/// Row `row`'s GGUF blocks, read back from a packed matrix of `blocks` super-blocks per row.
pub fn unpack_row(format: Format, packed: &[u8], blocks: usize, row: usize) -> Vec<u8> {
    let (src, dst) = (format.block_bytes(), packed_bytes(format));
    let (gi, r) = (row / ROWS, row % ROWS);
    let mut out = vec![0u8; blocks * src];
    for (i, b) in out.chunks_exact_mut(src).enumerate() {
        let p = &packed[(gi * blocks + i) * dst..(gi * blocks + i + 1) * dst];
        match format {
            Format::Q4K => {
                for q in 0..32 {
                    b[16 + 4 * q..20 + 4 * q].copy_from_slice(&p[64 * q + 4 * r..64 * q + 4 * r + 4]);
                }
                let sc = |s: usize| p[2048 + 16 * s + r];
                let m = |s: usize| p[2176 + 32 * (s / 2) + 2 * r + s % 2];
                // ggml's 6-bit packing (the inverse of `scale_min_k4`).
                for j in 0..4 {
                    b[4 + j] = sc(j) | ((sc(j + 4) >> 4) << 6);
                    b[8 + j] = m(j) | ((m(j + 4) >> 4) << 6);
                    b[12 + j] = (sc(j + 4) & 0x0F) | ((m(j + 4) & 0x0F) << 4);
                }
                b[0..2].copy_from_slice(&p[2304 + 2 * r..2306 + 2 * r]);
                b[2..4].copy_from_slice(&p[2336 + 2 * r..2338 + 2 * r]);
            }
            Format::Q6K => {
                for q in 0..48 {
                    b[4 * q..4 * q + 4].copy_from_slice(&p[64 * q + 4 * r..64 * q + 4 * r + 4]);
                }
                for s in 0..16 {
                    b[192 + s] = p[3072 + 16 * s + r];
                }
                b[208..210].copy_from_slice(&p[3328 + 2 * r..3330 + 2 * r]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn packing_keeps_every_byte_of_every_row() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for format in [Format::Q4K, Format::Q6K] {
            let (n, blocks) = (32, 3);
            // Random bytes: every bit of a block, the 6-bit scales' included, must come back.
            let w: Vec<u8> = (0..n * blocks * format.block_bytes()).map(|_| rng.random()).collect();
            let packed = pack(format, &w, n, blocks);
            assert_eq!(packed.len(), n / ROWS * blocks * packed_bytes(format));
            let row_bytes = blocks * format.block_bytes();
            for row in 0..n {
                assert_eq!(
                    unpack_row(format, &packed, blocks, row),
                    w[row * row_bytes..(row + 1) * row_bytes],
                    "{format:?} row {row}"
                );
            }
        }
    }
}
