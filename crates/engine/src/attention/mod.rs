//! Causal attention of a step's query rows over their sequences' caches, in plain code.
//!
//! Every query row (a decoding token, or one token of a prompt chunk) is computed on its own:
//! its scores over the keys up to its position, their softmax, and the weighted sum of values,
//! always in the same order. So a token gets the same bits whether its prompt was read in one
//! chunk or several, and whatever else shares the step. Rows and heads are spread over candle's
//! threads. Compared with tensor operations over whole chunks, a row never computes the scores
//! of the future keys the causal mask would throw away, and nothing is allocated per head.
//!
//! Keys and values are read as the cache stores them (f16, or 8-bit blocks with a scale), and
//! widened as they are used. Deep into a long thought the cache is most of what a decoding
//! step reads: a copy as f32 each step would write twice its size and read it back, which made
//! decoding at a depth of 4,096 run at 0.6 of its short-context rate. Widening is exact, so
//! the arithmetic, and every bit of the result, is what it was on the copy.
//!
//! The portable code says what is computed; [`avx2`] and [`avx512`] compute the same sums in the
//! same order, several keys or columns at a time, chosen with the matrix kernels
//! ([`Kernel::chosen`]). Their work per key is what limits a deep step: at 8,192 positions the
//! 1.5B model's attention is 0.7 × 10⁹ multiply-adds per token. The keys are stored in tiles of
//! sixteen, column by column ([`Tiles`]), so a register holds sixteen keys' scores as they are
//! summed; the values a position to a row, so a register holds sixteen columns of the output.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

use crate::kquants::Kernel;
use crate::kv_cache::{LayerCache, Rows, Tiles, KEY_TILE, Q8_BLOCK};
use crate::parallel::{self, Disjoint};
use crate::rowwise::exp;
use half::f16;

/// Multiply-adds below which a step's attention stays on the calling thread.
const PARALLEL_FROM: usize = 1 << 18;

/// Query heads that read one KV head together, at most (see [`group_size`]).
const MAX_GROUP: usize = 8;

/// Query heads that read one KV head together on this CPU's kernel, so that each head's two sums
/// (two tiles or half tiles of keys, or two columns of values) stay in registers with the values
/// they multiply: twelve of AVX2's sixteen, sixteen of AVX-512's thirty-two. A model with seven
/// query heads per KV head (Qwen2 0.5B and 7B) then reads its cache once with AVX-512, twice (as
/// 4 and 3) with AVX2.
fn group_size() -> usize {
    match Kernel::chosen() {
        Kernel::Avx512 | Kernel::Amx => MAX_GROUP,
        Kernel::Avx2 | Kernel::Reference => 6,
    }
}

/// Keys whose values are summed into the output before the next ones: 256 rows of 128 f16
/// values take 64 KiB, which the second-level cache keeps while every column of them is summed.
const VALUE_BLOCK: usize = 256;

/// Shapes of one layer's attention.
#[derive(Debug, Clone, Copy)]
pub struct Heads {
    pub heads: usize,
    pub kv_heads: usize,
    pub hd: usize,
}

/// One sequence's part of the step: its query rows are `first_row..first_row + rows` of the
/// step, and its cache (already holding those rows' keys and values) had `past` entries before.
pub struct Span<'a> {
    pub cache: &'a LayerCache,
    pub past: usize,
    pub first_row: usize,
    pub rows: usize,
}

/// `q` holds the step's queries as `(heads, total, hd)`; the result is `(total, heads · hd)`.
pub fn attend(q: &[f32], total: usize, spans: &[Span], shape: Heads) -> Vec<f32> {
    let Heads { heads, kv_heads, hd } = shape;
    let rep = heads / kv_heads;
    // A few short rows (one decoding sequence early on) cost less than handing them to the
    // pool, twice per layer.
    let work: usize = spans.iter().map(|s| s.rows * (s.past + s.rows)).sum::<usize>() * heads * hd;
    let parallel = work >= PARALLEL_FROM;
    // Which span each row belongs to.
    let owner: Vec<usize> = spans.iter().enumerate().flat_map(|(i, s)| std::iter::repeat_n(i, s.rows)).collect();
    assert_eq!(owner.len(), total, "spans cover the step's rows");
    let mut out = vec![0f32; total * heads * hd];
    let dst = Disjoint::new(&mut out);
    // A task is one row's query heads that share a KV head (grouped-query attention): each key
    // and value is widened once for all of them, not once per head.
    // The heads in groups as even as they can be (7 as 4 and 3, not 6 and 1).
    let groups = rep.div_ceil(group_size());
    parallel::for_chunks_when(parallel, total * kv_heads, |tasks| {
        let mut scores = Vec::new();
        for task in tasks {
            let (row, g) = (task / kv_heads, task % kv_heads);
            let s = &spans[owner[row]];
            let visible = s.past + (row - s.first_row) + 1;
            let (keys, values) = (s.cache.keys(g, hd, visible), s.cache.values(g, hd, visible));
            for k in 0..groups {
                let first = g * rep + k * rep / groups;
                let n = g * rep + (k + 1) * rep / groups - first;
                let qs: [&[f32]; MAX_GROUP] = std::array::from_fn(|i| &q[((first + i.min(n - 1)) * total + row) * hd..][..hd]);
                let qs = &qs[..n];
                // SAFETY: task (row, g) alone writes these heads' slices of the row.
                let o = unsafe { dst.slice((row * heads + first) * hd..(row * heads + first + n) * hd) };
                match n {
                    1 => group::<1>(qs, keys, values, &mut scores, o),
                    2 => group::<2>(qs, keys, values, &mut scores, o),
                    3 => group::<3>(qs, keys, values, &mut scores, o),
                    4 => group::<4>(qs, keys, values, &mut scores, o),
                    5 => group::<5>(qs, keys, values, &mut scores, o),
                    6 => group::<6>(qs, keys, values, &mut scores, o),
                    7 => group::<7>(qs, keys, values, &mut scores, o),
                    _ => group::<MAX_GROUP>(qs, keys, values, &mut scores, o),
                }
            }
        }
    });
    out
}

/// `N` query heads (`qs`, `hd` each) over the keys and values of the KV head they share
/// (`len × hd` each), into `out` (`N × hd`), for either way the cache stores them.
fn group<const N: usize>(qs: &[&[f32]], keys: Tiles, values: Rows, scores: &mut Vec<f32>, out: &mut [f32]) {
    let Tiles { len, hd, .. } = keys;
    match (keys.rows, values) {
        (Rows::F16(k), Rows::F16(v)) => group_of::<N, _, _>(qs, F16Tiles { x: k, len, hd }, v, scores, out),
        (Rows::Q8 { q, d }, Rows::Q8 { q: vq, d: vd }) => {
            group_of::<N, _, _>(qs, Q8Tiles { q, d, len, hd }, Q8 { q: vq, d: vd }, scores, out)
        }
        _ => unreachable!("a layer stores its keys and values alike"),
    }
}

/// [`group`] for one storage, on the kernel chosen for this CPU ([`Kernel::chosen`], which
/// [`crate::kquants::KERNEL_ENV`] can lower). Per head and key, and per head and output value,
/// the arithmetic runs in one fixed order, whatever else is in the step and whichever kernel
/// runs it: every kernel gives the same bits.
fn group_of<const N: usize, K: Keys, S: Stored>(qs: &[&[f32]], keys: K, values: S, scores: &mut Vec<f32>, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    match Kernel::chosen() {
        // SAFETY: the chosen kernel is one the CPU runs (AVX-512 implies AVX2, FMA and F16C).
        Kernel::Avx512 | Kernel::Amx => return unsafe { avx512::group::<N, K, S>(qs, keys, values, scores, out) },
        // SAFETY: as above: the CPU has AVX2, FMA and F16C.
        Kernel::Avx2 => return unsafe { avx2::group::<N, K, S>(qs, keys, values, scores, out) },
        Kernel::Reference => {}
    }
    group_body::<N, K, S, PORTABLE>(qs, keys, values, scores, out)
}

/// Code paths [`group_body`] is compiled for.
const PORTABLE: u8 = 0;
const AVX2: u8 = 1;
const AVX512: u8 = 2;

/// One group's attention: scores, softmax, weighted sums. `L` says which instructions the
/// caller was compiled for; each step picks its fastest code for them.
#[inline(always)]
fn group_body<const N: usize, K: Keys, S: Stored, const L: u8>(
    qs: &[&[f32]],
    keys: K,
    values: S,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    let qs: [&[f32]; N] = qs.try_into().expect("N query heads");
    let (hd, len) = (keys.hd(), keys.len());
    assert!(values.values() == len * hd && out.len() >= N * hd, "keys, values and output fit the heads");
    let scale = 1.0 / (hd as f32).sqrt();
    // Head-major: head h's scores are scores[h·len..(h+1)·len].
    scores.clear();
    scores.resize(N * len, 0.0);
    scores_by::<N, K, L>(qs, keys, scale, scores);
    for s in scores.chunks_exact_mut(len) {
        softmax::<L>(s);
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as above.
    unsafe {
        match L {
            AVX512 if hd.is_multiple_of(32) => return avx512::weighted_sums::<N, S>(scores, len, values, hd, out),
            AVX2 | AVX512 => return avx2::weighted_sums::<N, S>(scores, len, values, hd, out),
            _ => {}
        }
    }
    tail_sums::<N, S>(scores, len, values, hd, 0, out);
}

/// `scores[h·len + j]` = head h's query · key j, times `scale`, on the code for `L`.
#[inline(always)]
fn scores_by<const N: usize, K: Keys, const L: u8>(qs: [&[f32]; N], keys: K, scale: f32, scores: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: L names features the caller was compiled for, on a CPU that has them.
    unsafe {
        match L {
            AVX512 => return avx512::scores::<N, K>(qs, keys, scale, scores),
            AVX2 => return avx2::scores::<N, K>(qs, keys, scale, scores),
            _ => {}
        }
    }
    scores_portable(qs, keys, scale, scores)
}

/// What [`scores_by`] computes: each score one chain of fused multiply-adds over the key's
/// values in order, then scaled.
fn scores_portable<const N: usize, K: Keys>(qs: [&[f32]; N], keys: K, scale: f32, scores: &mut [f32]) {
    let (len, hd) = (keys.len(), keys.hd());
    for (h, q) in qs.iter().enumerate() {
        for j in 0..len {
            let dot = (0..hd).fold(0f32, |acc, c| q[c].mul_add(keys.get(j, c), acc));
            scores[h * len + j] = dot * scale;
        }
    }
}

/// `s` becomes its softmax: `e^(x - max)`, divided by their sum.
#[inline(always)]
fn softmax<const L: u8>(s: &mut [f32]) {
    exp_less_max::<L>(s);
    let inv = 1.0 / sum(s);
    for x in s.iter_mut() {
        *x *= inv;
    }
}

/// `s[i] = e^(s[i] - max)`, with `max` the largest (NaN skipped, as `f32::max` skips it).
#[inline(always)]
fn exp_less_max<const L: u8>(s: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if L >= AVX2 {
        // SAFETY: the caller was compiled for AVX2, on a CPU that has it.
        return unsafe { avx2::exp_less_max(s) };
    }
    let max = s.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
    for x in s.iter_mut() {
        *x = exp(*x - max);
    }
}

/// A KV head's keys in tiles as the cache stores them ([`Tiles`]), read in place and widened
/// exactly. Columns come in blocks that share a scale (8-bit blocks; f16 has one block).
pub(super) trait Keys: Copy {
    /// How many keys there are.
    fn len(self) -> usize;
    /// Values per key.
    fn hd(self) -> usize;
    /// Columns per block of one scale.
    fn block(self) -> usize;
    /// Value `c` of key `j`.
    fn get(self, j: usize, c: usize) -> f32;

    /// The scale of the block of column `c` of the sixteen keys of tile `t`.
    ///
    /// # Safety
    /// Tile `t` is stored and `c < hd`. The CPU has AVX-512F and F16C, and the caller is
    /// compiled for them.
    #[cfg(target_arch = "x86_64")]
    unsafe fn scale16(self, t: usize, c: usize) -> std::arch::x86_64::__m512;

    /// Column `c` of the sixteen keys of tile `t`, widened; `scale` is their block's
    /// ([`Keys::scale16`]).
    ///
    /// # Safety
    /// As [`Keys::scale16`].
    #[cfg(target_arch = "x86_64")]
    unsafe fn column16(self, t: usize, c: usize, scale: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512;

    /// [`Keys::scale16`] for the eight keys of half `half` of tile `t`.
    ///
    /// # Safety
    /// As [`Keys::scale16`], with AVX2 and F16C.
    #[cfg(target_arch = "x86_64")]
    unsafe fn scale8(self, t: usize, half: usize, c: usize) -> std::arch::x86_64::__m256;

    /// [`Keys::column16`] for the eight keys of half `half` of tile `t`.
    ///
    /// # Safety
    /// As [`Keys::scale8`].
    #[cfg(target_arch = "x86_64")]
    unsafe fn column8(self, t: usize, half: usize, c: usize, scale: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256;

    /// Asks the CPU to start loading what [`Keys::column16`] reads of column `c` of tile `t`
    /// (and its block's scales), into L2. Any tile: past the end, nothing happens.
    #[cfg(target_arch = "x86_64")]
    fn prefetch16(self, t: usize, c: usize);
}

/// f16 keys in tiles.
#[derive(Clone, Copy)]
pub(super) struct F16Tiles<'a> {
    x: &'a [f16],
    len: usize,
    hd: usize,
}

impl Keys for F16Tiles<'_> {
    fn len(self) -> usize {
        self.len
    }

    fn hd(self) -> usize {
        self.hd
    }

    fn block(self) -> usize {
        self.hd
    }

    fn get(self, j: usize, c: usize) -> f32 {
        self.x[Tiles::at(j, c, self.hd)].to_f32()
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn scale16(self, _: usize, _: usize) -> std::arch::x86_64::__m512 {
        // SAFETY: no memory is read; the CPU has AVX-512F (the caller's contract).
        unsafe { std::arch::x86_64::_mm512_setzero_ps() }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn column16(self, t: usize, c: usize, _: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
        use std::arch::x86_64::*;
        // SAFETY: tile t is stored, so its column c's 16 values are (the caller's contract).
        unsafe { _mm512_cvtph_ps(_mm256_loadu_si256(self.x.as_ptr().add(Tiles::at(t * KEY_TILE, c, self.hd)) as *const __m256i)) }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn prefetch16(self, t: usize, c: usize) {
        prefetch_line(self.x.as_ptr().wrapping_add(Tiles::at(t * KEY_TILE, c, self.hd)));
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn scale8(self, _: usize, _: usize, _: usize) -> std::arch::x86_64::__m256 {
        // SAFETY: no memory is read; the CPU has AVX (the caller's contract).
        unsafe { std::arch::x86_64::_mm256_setzero_ps() }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn column8(self, t: usize, half: usize, c: usize, _: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256 {
        use std::arch::x86_64::*;
        // SAFETY: as column16, for 8 of the 16 values.
        unsafe {
            _mm256_cvtph_ps(
                _mm_loadu_si128(self.x.as_ptr().add(Tiles::at(t * KEY_TILE + 8 * half, c, self.hd)) as *const __m128i),
            )
        }
    }
}

/// 8-bit keys in tiles: value `c` of key `j` is `q[at(j, c)] · d[scale_at(j, c / 32)]`.
#[derive(Clone, Copy)]
pub(super) struct Q8Tiles<'a> {
    q: &'a [i8],
    d: &'a [f16],
    len: usize,
    hd: usize,
}

impl Keys for Q8Tiles<'_> {
    fn len(self) -> usize {
        self.len
    }

    fn hd(self) -> usize {
        self.hd
    }

    fn block(self) -> usize {
        Q8_BLOCK
    }

    fn get(self, j: usize, c: usize) -> f32 {
        self.q[Tiles::at(j, c, self.hd)] as f32 * self.d[Tiles::scale_at(j, c / Q8_BLOCK, self.hd)].to_f32()
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn scale16(self, t: usize, c: usize) -> std::arch::x86_64::__m512 {
        use std::arch::x86_64::*;
        // SAFETY: tile t is stored, so are its 16 scales of each block (the caller's contract).
        unsafe {
            let at = Tiles::scale_at(t * KEY_TILE, c / Q8_BLOCK, self.hd);
            _mm512_cvtph_ps(_mm256_loadu_si256(self.d.as_ptr().add(at) as *const __m256i))
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn column16(self, t: usize, c: usize, scale: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
        use std::arch::x86_64::*;
        // SAFETY: as F16Tiles::column16. The product is exact: 8 bits times f16's 11 fit f32's 24.
        unsafe {
            let bytes = _mm_loadu_si128(self.q.as_ptr().add(Tiles::at(t * KEY_TILE, c, self.hd)) as *const __m128i);
            _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes)), scale)
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn prefetch16(self, t: usize, c: usize) {
        prefetch_line(self.q.as_ptr().wrapping_add(Tiles::at(t * KEY_TILE, c, self.hd)));
        if c.is_multiple_of(Q8_BLOCK) {
            prefetch_line(self.d.as_ptr().wrapping_add(Tiles::scale_at(t * KEY_TILE, c / Q8_BLOCK, self.hd)));
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn scale8(self, t: usize, half: usize, c: usize) -> std::arch::x86_64::__m256 {
        use std::arch::x86_64::*;
        // SAFETY: as scale16, for 8 of the 16 scales.
        unsafe {
            let at = Tiles::scale_at(t * KEY_TILE + 8 * half, c / Q8_BLOCK, self.hd);
            _mm256_cvtph_ps(_mm_loadu_si128(self.d.as_ptr().add(at) as *const __m128i))
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn column8(self, t: usize, half: usize, c: usize, scale: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256 {
        use std::arch::x86_64::*;
        // SAFETY: as column16, for 8 of the 16 values; exact, as there.
        unsafe {
            let bytes = _mm_loadl_epi64(self.q.as_ptr().add(Tiles::at(t * KEY_TILE + 8 * half, c, self.hd)) as *const __m128i);
            _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), scale)
        }
    }
}

/// A KV head's values as the cache stores them, read in place and widened exactly.
pub(super) trait Stored: Copy {
    /// How many values there are (`len × hd`).
    fn values(self) -> usize;
    /// Value `i` (row-major).
    fn get(self, i: usize) -> f32;
    /// Values `i..i + 8`, which lie in one 8-bit block when there are blocks.
    ///
    /// # Safety
    /// `i + 8 <= self.values()`, and `i` is a multiple of 8.
    /// The CPU has AVX2 and F16C, and the caller is compiled for them (inlined into it).
    #[cfg(target_arch = "x86_64")]
    unsafe fn load8(self, i: usize) -> std::arch::x86_64::__m256;

    /// Values `i..i + 16` (in one 8-bit block).
    ///
    /// # Safety
    /// `i + 16 <= self.values()`, and `i` is a multiple of 16. The CPU has AVX-512F and F16C,
    /// and the caller is compiled for them.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load16(self, i: usize) -> std::arch::x86_64::__m512;

    /// Asks the CPU to start loading row `j` of `hd` values (any row: past the end, nothing
    /// happens), so that it has arrived when a later pass reads it.
    #[cfg(target_arch = "x86_64")]
    fn prefetch(self, j: usize, hd: usize);
}

/// Asks for the cache line holding `p` into L2.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_line<T>(p: *const T) {
    // SAFETY: a prefetch is a hint that reads nothing and cannot fault, whatever the address.
    unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(p as *const i8) };
}

/// Prefetches `bytes` bytes from `p` into L2, one cache line at a time. A prefetch never faults.
/// L2 rather than L1: when keys were prefetched too, at depth 4,096 (criterion `decode
/// attention`), fetching them into L1 64 keys ahead measured slower than into L2 128 ahead;
/// rows asked for far ahead into L1 would likely evict the scores and sums it holds. The
/// AVX-512 scoring prefetches its keys a column at a time ([`Keys::prefetch16`]), which paid
/// where prefetching rows of keys had not.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_bytes<T>(p: *const T, bytes: usize) {
    for off in (0..bytes).step_by(64) {
        prefetch_line((p as *const i8).wrapping_add(off));
    }
}

impl Stored for &[f16] {
    fn values(self) -> usize {
        self.len()
    }

    fn get(self, i: usize) -> f32 {
        self[i].to_f32()
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load8(self, i: usize) -> std::arch::x86_64::__m256 {
        use std::arch::x86_64::*;
        // SAFETY: the caller keeps i + 8 within the slice; the CPU has F16C (the caller's contract).
        unsafe { _mm256_cvtph_ps(_mm_loadu_si128(self.as_ptr().add(i) as *const __m128i)) }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load16(self, i: usize) -> std::arch::x86_64::__m512 {
        use std::arch::x86_64::*;
        // SAFETY: the caller keeps i + 16 within the slice; the CPU has AVX-512F.
        unsafe { _mm512_cvtph_ps(_mm256_loadu_si256(self.as_ptr().add(i) as *const __m256i)) }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn prefetch(self, j: usize, hd: usize) {
        prefetch_bytes(self.as_ptr().wrapping_add(j * hd), hd * size_of::<f16>());
    }
}

/// 8-bit blocks: value `i` is `q[i] · d[i / 32]`.
#[derive(Clone, Copy)]
pub(super) struct Q8<'a> {
    q: &'a [i8],
    d: &'a [f16],
}

impl Q8<'_> {
    /// Block `i / 32`'s scale in every lane, widened by F16C directly (half's `to_f32` may
    /// check the CPU each call).
    ///
    /// # Safety
    /// `i < self.values()`; the CPU has F16C and AVX2, and the caller is compiled for them.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn scale(self, i: usize) -> std::arch::x86_64::__m256 {
        use std::arch::x86_64::*;
        // SAFETY: block i / 32 is within d when i is within q (the caller's contract).
        unsafe {
            let bits = _mm_cvtsi32_si128(i32::from(self.d.get_unchecked(i / Q8_BLOCK).to_bits()));
            _mm256_broadcastss_ps(_mm_cvtph_ps(bits))
        }
    }
}

impl Stored for Q8<'_> {
    fn values(self) -> usize {
        self.q.len()
    }

    fn get(self, i: usize) -> f32 {
        self.q[i] as f32 * self.d[i / Q8_BLOCK].to_f32()
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load8(self, i: usize) -> std::arch::x86_64::__m256 {
        use std::arch::x86_64::*;
        // SAFETY: the caller keeps i + 8 within q; AVX2 is enabled (the caller's contract). The
        // product is exact: 8 bits times f16's 11 fit f32's 24.
        unsafe {
            let bytes = _mm_loadl_epi64(self.q.as_ptr().add(i) as *const __m128i);
            _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), self.scale(i))
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load16(self, i: usize) -> std::arch::x86_64::__m512 {
        use std::arch::x86_64::*;
        // SAFETY: the caller keeps i + 16 within q, in one block; AVX-512F is enabled. Exact, as above.
        unsafe {
            let bytes = _mm_loadu_si128(self.q.as_ptr().add(i) as *const __m128i);
            let scale = _mm512_broadcast_f32x4(_mm256_castps256_ps128(self.scale(i)));
            _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes)), scale)
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn prefetch(self, j: usize, hd: usize) {
        prefetch_bytes(self.q.as_ptr().wrapping_add(j * hd), hd);
        prefetch_bytes(self.d.as_ptr().wrapping_add(j * hd / Q8_BLOCK), hd / Q8_BLOCK * size_of::<f16>());
    }
}

/// `out[h·hd + c] = Σ_j scores[h·len + j] · values[j·hd + c]` one value at a time, from column
/// `from`, summed over the keys in order with fused multiply-adds. The SIMD kernels compute the
/// same sums, in the same order, several columns at a time.
fn tail_sums<const N: usize, S: Stored>(scores: &[f32], len: usize, values: S, hd: usize, from: usize, out: &mut [f32]) {
    for h in 0..N {
        for c in from..hd {
            let mut a = 0f32;
            for j in 0..len {
                a = scores[h * len + j].mul_add(values.get(j * hd + c), a);
            }
            out[h * hd + c] = a;
        }
    }
}

/// The eight lanes' sum, pairwise (three dependent additions instead of seven).
fn lanes(a: &[f32; 8]) -> f32 {
    ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))
}

/// A sum in eight independent lanes, then the lanes pairwise.
fn sum(xs: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = xs.chunks_exact(8);
    let tail: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        for l in 0..8 {
            acc[l] += c[l];
        }
    }
    lanes(&acc) + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv_cache::KvCacheType;

    /// Straightforward f64 attention of one row, for comparison.
    fn reference(q: &[f32], keys: &[f32], values: &[f32], hd: usize) -> Vec<f64> {
        let scores: Vec<f64> = keys
            .chunks(hd)
            .map(|k| q.iter().zip(k).map(|(&a, &b)| a as f64 * b as f64).sum::<f64>() / (hd as f64).sqrt())
            .collect();
        let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
        let total: f64 = e.iter().sum();
        let mut out = vec![0f64; hd];
        for (p, v) in e.iter().zip(values.chunks(hd)) {
            for (o, &v) in out.iter_mut().zip(v) {
                *o += p / total * v as f64;
            }
        }
        out
    }

    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n).map(|i| ((i * 7919 + seed * 104_729) % 2003) as f32 / 1000.0 - 1.0).collect()
    }

    /// What the cache holds for these rows, widened.
    fn stored(rows: Rows) -> Vec<f32> {
        match rows {
            Rows::F16(x) => x.iter().map(|v| v.to_f32()).collect(),
            Rows::Q8 { q, d } => (0..q.len()).map(|i| Q8 { q, d }.get(i)).collect(),
        }
    }

    #[test]
    fn each_row_is_causal_attention_over_its_own_sequence() {
        // Two query heads per KV head; and ten, more than one group, with a head size that
        // leaves columns after the last eight; then both cache types at a size 8-bit blocks fit.
        for shape in [Heads { heads: 4, kv_heads: 2, hd: 16 }, Heads { heads: 20, kv_heads: 2, hd: 20 }] {
            check_against_reference(shape, KvCacheType::F16);
        }
        for kind in KvCacheType::ALL {
            check_against_reference(Heads { heads: 12, kv_heads: 2, hd: 64 }, kind);
        }
    }

    fn check_against_reference(shape: Heads, kind: KvCacheType) {
        let Heads { heads, kv_heads, hd } = shape;
        // Two sequences: one with 5 cached tokens decoding 1, one reading a chunk of 3 after 2.
        let (mut a, mut b) = (LayerCache::new(kind), LayerCache::new(kind));
        a.append(kv_heads, hd, &values(kv_heads * 6 * hd, 1), &values(kv_heads * 6 * hd, 2));
        b.append(kv_heads, hd, &values(kv_heads * 5 * hd, 3), &values(kv_heads * 5 * hd, 4));
        let total = 4;
        let q = values(heads * total * hd, 5);
        let spans = [Span { cache: &a, past: 5, first_row: 0, rows: 1 }, Span { cache: &b, past: 2, first_row: 1, rows: 3 }];
        let out = attend(&q, total, &spans, shape);
        for row in 0..total {
            let (cache, visible) = if row == 0 { (&a, 6) } else { (&b, 2 + row) };
            for h in 0..heads {
                let g = h / (heads / kv_heads);
                // Against the values the cache holds (f16, or 8-bit blocks).
                let (keys, vals) = (cache.keys(g, hd, visible).widened(), stored(cache.values(g, hd, visible)));
                let want = reference(&q[(h * total + row) * hd..][..hd], &keys, &vals, hd);
                let got = &out[(row * heads + h) * hd..][..hd];
                for (g, w) in got.iter().zip(&want) {
                    assert!((*g as f64 - w).abs() < 1e-5, "{kind}: row {row} head {h}: {g} vs {w}");
                }
            }
        }
    }

    /// One group's output on each kernel this CPU has, for each storage.
    fn on_every_kernel<const N: usize, K: Keys, S: Stored>(qs: &[&[f32]], keys: K, values: S) -> Vec<(Kernel, Vec<f32>)> {
        let hd = qs[0].len();
        let run = |kernel: Kernel| {
            let (mut scores, mut out) = (Vec::new(), vec![0f32; N * hd]);
            match kernel {
                Kernel::Reference => group_body::<N, K, S, PORTABLE>(qs, keys, values, &mut scores, &mut out),
                // SAFETY: `Kernel::available` lists only kernels this CPU runs.
                #[cfg(target_arch = "x86_64")]
                Kernel::Avx2 => unsafe { avx2::group::<N, K, S>(qs, keys, values, &mut scores, &mut out) },
                // SAFETY: as above.
                #[cfg(target_arch = "x86_64")]
                Kernel::Avx512 | Kernel::Amx => unsafe { avx512::group::<N, K, S>(qs, keys, values, &mut scores, &mut out) },
                #[cfg(not(target_arch = "x86_64"))]
                _ => unreachable!(),
            }
            (kernel, out)
        };
        Kernel::available().into_iter().map(run).collect()
    }

    #[test]
    fn every_kernel_gives_the_same_bits() {
        // Head sizes with and without whole 32s and 16s (20 leaves a tail after the last
        // eight); lengths with and without whole eights, across a value block.
        for (hd, len) in [(128, 8), (128, 301), (64, 17), (80, 40), (20, 13), (24, 9), (128, 3)] {
            for kind in KvCacheType::ALL {
                let kind = kind.for_head_dim(hd);
                let mut cache = LayerCache::new(kind);
                cache.append(1, hd, &values(len * hd, 11), &values(len * hd, 12));
                let q = values(7 * hd, 13);
                let qs: Vec<&[f32]> = q.chunks(hd).collect();
                // Runs `N` heads on every kernel, for either cache type.
                macro_rules! runs {
                    ($n:literal) => {{
                        let keys = cache.keys(0, hd, len);
                        match (keys.rows, cache.values(0, hd, len)) {
                            (Rows::F16(k), Rows::F16(v)) => on_every_kernel::<$n, _, _>(&qs[..$n], F16Tiles { x: k, len, hd }, v),
                            (Rows::Q8 { q, d }, Rows::Q8 { q: vq, d: vd }) => {
                                on_every_kernel::<$n, _, _>(&qs[..$n], Q8Tiles { q, d, len, hd }, Q8 { q: vq, d: vd })
                            }
                            _ => unreachable!(),
                        }
                    }};
                }
                let runs = runs!(6);
                let (first, want) = &runs[0];
                for (kernel, got) in &runs[1..] {
                    let same = got.iter().zip(want).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{kind}, hd {hd}, {len} keys: {kernel:?} differs from {first:?}");
                }
                // And 5 and 7 heads (AVX-512 takes up to 8 at once).
                let same = |runs: Vec<(Kernel, Vec<f32>)>| {
                    runs.windows(2).all(|w| w[0].1.iter().zip(&w[1].1).all(|(a, b)| a.to_bits() == b.to_bits()))
                };
                let (five, seven) = (runs!(5), runs!(7));
                assert!(same(five) && same(seven), "{kind}, hd {hd}: 5 or 7 heads");
            }
        }
        eprintln!("kernels compared: {:?}", Kernel::available());
    }

    #[test]
    fn a_row_gets_the_same_bits_in_a_chunk_and_alone() {
        for kind in KvCacheType::ALL {
            let shape = Heads { heads: 6, kv_heads: 2, hd: 128 };
            let Heads { heads, kv_heads, hd } = shape;
            let mut cache = LayerCache::new(kind);
            cache.append(kv_heads, hd, &values(kv_heads * 150 * hd, 7), &values(kv_heads * 150 * hd, 8));
            let q = values(heads * 150 * hd, 9);
            // All 150 rows as one prompt chunk.
            let chunk = attend(&q, 150, &[Span { cache: &cache, past: 0, first_row: 0, rows: 150 }], shape);
            // Row 130 alone, as if decoding after 130 cached tokens.
            let q130: Vec<f32> = (0..heads).flat_map(|h| q[(h * 150 + 130) * hd..][..hd].to_vec()).collect();
            let alone = attend(&q130, 1, &[Span { cache: &cache, past: 130, first_row: 0, rows: 1 }], shape);
            assert_eq!(&chunk[130 * heads * hd..131 * heads * hd], &alone[..], "{kind}");
        }
    }
}
