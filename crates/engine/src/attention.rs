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
//! widened eight at a time as they are used. Deep into a long thought the cache is most of
//! what a decoding step reads: a copy as f32 each step would write twice its size and read it
//! back, which made decoding at a depth of 4,096 run at 0.6 of its short-context rate. Widening is exact, so the arithmetic,
//! and every bit of the result, is what it was on the copy.

use crate::kv_cache::{LayerCache, Rows, Q8_BLOCK};
use crate::parallel::{self, Disjoint};
use crate::rowwise::exp;
use half::f16;

/// Multiply-adds below which a step's attention stays on the calling thread.
const PARALLEL_FROM: usize = 1 << 18;

/// Query heads that read one KV head together, at most: their sums stay in registers.
const GROUP: usize = 8;

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
    parallel::for_chunks_when(parallel, total * kv_heads, |tasks| {
        let mut scores = Vec::new();
        for task in tasks {
            let (row, g) = (task / kv_heads, task % kv_heads);
            let s = &spans[owner[row]];
            let visible = s.past + (row - s.first_row) + 1;
            let (keys, values) = (s.cache.keys(g, hd, visible), s.cache.values(g, hd, visible));
            for first in (g * rep..(g + 1) * rep).step_by(GROUP) {
                let n = GROUP.min((g + 1) * rep - first);
                let qs: [&[f32]; GROUP] = std::array::from_fn(|i| &q[((first + i.min(n - 1)) * total + row) * hd..][..hd]);
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
                    _ => group::<GROUP>(qs, keys, values, &mut scores, o),
                }
            }
        }
    });
    out
}

/// `N` query heads (`qs`, `hd` each) over the keys and values of the KV head they share
/// (`len × hd` each), into `out` (`N × hd`), for either way the cache stores them.
fn group<const N: usize>(qs: &[&[f32]], keys: Rows, values: Rows, scores: &mut Vec<f32>, out: &mut [f32]) {
    match (keys, values) {
        (Rows::F16(k), Rows::F16(v)) => group_of::<N, _>(qs, k, v, scores, out),
        (Rows::Q8 { q, d }, Rows::Q8 { q: vq, d: vd }) => group_of::<N, _>(qs, Q8 { q, d }, Q8 { q: vq, d: vd }, scores, out),
        _ => unreachable!("a layer stores its keys and values alike"),
    }
}

/// [`group`] for one storage. Per head and key, and per head and output value, the arithmetic
/// runs in one fixed order, whatever else is in the step.
fn group_of<const N: usize, S: Stored>(qs: &[&[f32]], keys: S, values: S, scores: &mut Vec<f32>, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if simd() {
        // SAFETY: the CPU has AVX2, FMA and F16C (checked once, above).
        return unsafe { group_simd::<N, S>(qs, keys, values, scores, out) };
    }
    group_body::<N, S, false>(qs, keys, values, scores, out)
}

/// The CPU has AVX2, FMA and F16C: the attention runs eight lanes at a time. Chosen when the
/// program runs, not when it is compiled, so one binary serves CPUs with and without them.
#[cfg(target_arch = "x86_64")]
fn simd() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c"))
}

/// [`group_body`] compiled for AVX2, FMA and F16C (the intrinsics it calls inline into it).
///
/// # Safety
/// The CPU has those features.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn group_simd<const N: usize, S: Stored>(qs: &[&[f32]], keys: S, values: S, scores: &mut Vec<f32>, out: &mut [f32]) {
    group_body::<N, S, true>(qs, keys, values, scores, out)
}

#[inline(always)]
fn group_body<const N: usize, S: Stored, const SIMD: bool>(
    qs: &[&[f32]],
    keys: S,
    values: S,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    let qs: [&[f32]; N] = qs.try_into().expect("N query heads");
    let hd = qs[0].len();
    let len = keys.values() / hd;
    assert!(values.values() == len * hd && out.len() >= N * hd, "keys, values and output fit the heads");
    let scale = 1.0 / (hd as f32).sqrt();
    // Head-major: head h's scores are scores[h·len..(h+1)·len].
    scores.clear();
    scores.resize(N * len, 0.0);
    for j in 0..len {
        let d = dots::<N, S, SIMD>(qs, keys, j);
        for h in 0..N {
            scores[h * len + j] = d[h] * scale;
        }
    }
    for s in scores.chunks_exact_mut(len) {
        let max = s.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
        for x in s.iter_mut() {
            *x = exp(*x - max);
        }
        let inv = 1.0 / sum(s);
        for x in s.iter_mut() {
            *x *= inv;
        }
    }
    weighted_sums::<N, S, SIMD>(scores, len, values, hd, out);
}

/// A KV head's keys or values as the cache stores them, read in place and widened exactly.
trait Stored: Copy {
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
        // SAFETY: the caller keeps i + 8 within the slice; the CPU has F16C (the caller is `group_simd`).
        unsafe { _mm256_cvtph_ps(_mm_loadu_si128(self.as_ptr().add(i) as *const __m128i)) }
    }
}

/// 8-bit blocks: value `i` is `q[i] · d[i / 32]`.
#[derive(Clone, Copy)]
struct Q8<'a> {
    q: &'a [i8],
    d: &'a [f16],
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
        // SAFETY: the caller keeps i + 8 within q, so block i / 32 is within d; AVX2 is enabled
        // (the caller is `group_simd`). The product is exact: 8 bits times f16's 11 fit f32's 24.
        unsafe {
            let bytes = _mm_loadl_epi64(self.q.as_ptr().add(i) as *const __m128i);
            // The scale widened by F16C directly (half's `to_f32` may check the CPU each call).
            let bits = _mm_cvtsi32_si128(i32::from(self.d.get_unchecked(i / Q8_BLOCK).to_bits()));
            let scale = _mm256_broadcastss_ps(_mm_cvtph_ps(bits));
            _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), scale)
        }
    }
}

/// The dot products of `N` queries with key `j`, each in eight lanes of fused multiply-adds
/// over the key in order, then the lanes summed pairwise.
#[inline(always)]
fn dots<const N: usize, S: Stored, const SIMD: bool>(qs: [&[f32]; N], keys: S, j: usize) -> [f32; N] {
    #[cfg(target_arch = "x86_64")]
    if SIMD {
        // SAFETY: SIMD is true only inside `group_simd`, on a CPU with its features.
        return unsafe { dots_simd(qs, keys, j) };
    }
    dots_portable(qs, keys, j)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn dots_simd<const N: usize, S: Stored>(qs: [&[f32]; N], keys: S, j: usize) -> [f32; N] {
    use std::arch::x86_64::*;
    let hd = qs[0].len();
    let n8 = hd / 8 * 8;
    assert!(qs.iter().all(|q| q.len() == hd) && (j + 1) * hd <= keys.values());
    // SAFETY: the CPU has AVX2, FMA and F16C (the caller is `group_simd`); every load reads 8 values below
    // n8, inside key j and each query (checked above).
    let acc = unsafe {
        let mut acc = [_mm256_setzero_ps(); N];
        for i in (0..n8).step_by(8) {
            let kv = keys.load8(j * hd + i);
            for h in 0..N {
                acc[h] = _mm256_fmadd_ps(_mm256_loadu_ps(qs[h].as_ptr().add(i)), kv, acc[h]);
            }
        }
        acc.map(|v| std::mem::transmute::<__m256, [f32; 8]>(v))
    };
    std::array::from_fn(|h| lanes(&acc[h]) + tail_dot(qs[h], keys, j, n8))
}

#[inline(always)]
fn dots_portable<const N: usize, S: Stored>(qs: [&[f32]; N], keys: S, j: usize) -> [f32; N] {
    let hd = qs[0].len();
    let n8 = hd / 8 * 8;
    std::array::from_fn(|h| {
        let mut acc = [0f32; 8];
        for i in (0..n8).step_by(8) {
            for l in 0..8 {
                acc[l] = qs[h][i + l].mul_add(keys.get(j * hd + i + l), acc[l]);
            }
        }
        lanes(&acc) + tail_dot(qs[h], keys, j, n8)
    })
}

/// The products past the last whole eight of a dot product (none for head sizes of 64 or 128).
fn tail_dot<S: Stored>(q: &[f32], keys: S, j: usize, from: usize) -> f32 {
    let hd = q.len();
    (from..hd).fold(0.0, |s, c| q[c].mul_add(keys.get(j * hd + c), s))
}

/// `out[h·hd + c] = Σ_j scores[h·len + j] · values[j·hd + c]`, summed over the keys in order with
/// fused multiply-adds, eight values of the `N` heads at a time. (Going through the keys in
/// blocks that stay in the first-level cache, carrying the sums through `out`, was tried: it
/// ran decode after 8,192 tokens at 0.4 of this.)
#[inline(always)]
fn weighted_sums<const N: usize, S: Stored, const SIMD: bool>(scores: &[f32], len: usize, values: S, hd: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if SIMD {
        // SAFETY: SIMD is true only inside `group_simd`, on a CPU with its features.
        return unsafe { weighted_sums_simd::<N, S>(scores, len, values, hd, out) };
    }
    tail_sums::<N, S>(scores, len, values, hd, 0, out);
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn weighted_sums_simd<const N: usize, S: Stored>(scores: &[f32], len: usize, values: S, hd: usize, out: &mut [f32]) {
    use std::arch::x86_64::*;
    let n8 = hd / 8 * 8;
    assert!(scores.len() >= N * len && values.values() >= len * hd && out.len() >= N * hd);
    // SAFETY: the CPU has AVX2, FMA and F16C (the caller is `group_simd`); loads read 8 values at column
    // col < n8 of value rows j < len, stores write 8 at column col of head rows h < N, and
    // scores are read below N·len (all checked above).
    unsafe {
        for col in (0..n8).step_by(8) {
            let mut acc = [_mm256_setzero_ps(); N];
            for j in 0..len {
                let v = values.load8(j * hd + col);
                for (h, a) in acc.iter_mut().enumerate() {
                    *a = _mm256_fmadd_ps(_mm256_set1_ps(*scores.get_unchecked(h * len + j)), v, *a);
                }
            }
            for (h, a) in acc.iter().enumerate() {
                _mm256_storeu_ps(out.as_mut_ptr().add(h * hd + col), *a);
            }
        }
    }
    tail_sums::<N, S>(scores, len, values, hd, n8, out);
}

/// [`weighted_sums`] one value at a time, from column `from`: the same sums in the same order.
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
                let (keys, vals) = (stored(cache.keys(g, hd, visible)), stored(cache.values(g, hd, visible)));
                let want = reference(&q[(h * total + row) * hd..][..hd], &keys, &vals, hd);
                let got = &out[(row * heads + h) * hd..][..hd];
                for (g, w) in got.iter().zip(&want) {
                    assert!((*g as f64 - w).abs() < 1e-5, "{kind}: row {row} head {h}: {g} vs {w}");
                }
            }
        }
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
