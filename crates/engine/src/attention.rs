//! Causal attention of a step's query rows over their sequences' caches, in plain code.
//!
//! Every query row (a decoding token, or one token of a prompt chunk) is computed on its own:
//! its scores over the keys up to its position, their softmax, and the weighted sum of values,
//! always in the same order. So a token gets the same bits whether its prompt was read in one
//! chunk or several, and whatever else shares the step. Rows and heads are spread over candle's
//! threads. Compared with tensor operations over whole chunks, a row never computes the scores
//! of the future keys the causal mask would throw away, and nothing is allocated per head.
//!
//! Keys and values are read as the cache stores them, f16, and widened eight at a time as they
//! are used. Deep into a long thought the cache is most of what a decoding step reads: a copy
//! as f32 each step would write twice its size and read it back, which made decoding at a
//! depth of 4,096 run at 0.6 of its short-context rate. Widening is exact, so the arithmetic,
//! and every bit of the result, is what it was on the copy.

use crate::kv_cache::LayerCache;
use crate::parallel::{self, Disjoint};
use crate::rowwise::exp;
use half::f16;

/// Multiply-adds below which a step's attention stays on the calling thread.
const PARALLEL_FROM: usize = 1 << 18;

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
    parallel::for_chunks_when(parallel, total * heads, |tasks| {
        let mut scores = Vec::new();
        for task in tasks {
            let (row, h) = (task / heads, task % heads);
            let s = &spans[owner[row]];
            let visible = s.past + (row - s.first_row) + 1;
            let (keys, values) = (s.cache.keys(h / rep, hd, visible), s.cache.values(h / rep, hd, visible));
            let qh = &q[(h * total + row) * hd..][..hd];
            // SAFETY: task (row, h) alone writes this head's slice of the row.
            let o = unsafe { dst.slice((row * heads + h) * hd..(row * heads + h + 1) * hd) };
            head(qh, keys, values, &mut scores, o);
        }
    });
    out
}

/// One query head over `keys`/`values` (`len × hd` each), into `out` (zeroed, `hd`).
fn head(q: &[f32], keys: &[f16], values: &[f16], scores: &mut Vec<f32>, out: &mut [f32]) {
    let hd = q.len();
    let scale = 1.0 / (hd as f32).sqrt();
    scores.clear();
    let mut ks = keys.chunks_exact(4 * hd);
    for k4 in &mut ks {
        let (a, b) = k4.split_at(2 * hd);
        let d = dot4(q, [&a[..hd], &a[hd..], &b[..hd], &b[hd..]]);
        scores.extend(d.map(|d| d * scale));
    }
    scores.extend(ks.remainder().chunks_exact(hd).map(|k| dot(q, k) * scale));
    let max = scores.iter().fold(f32::NEG_INFINITY, |m, &s| m.max(s));
    for s in scores.iter_mut() {
        *s = exp(*s - max);
    }
    let inv = 1.0 / sum(scores);
    for s in scores.iter_mut() {
        *s *= inv;
    }
    // Each output value sums its keys' terms in key order. Done 32 values at a time, the sums
    // stay in registers instead of going through memory once per key.
    let mut cols = out.chunks_exact_mut(32);
    for (c, o) in (&mut cols).enumerate() {
        let acc: &mut [f32; 32] = o.try_into().expect("chunks of 32");
        weighted_sum32(scores, values, hd, 32 * c, acc);
    }
    let (rest, done) = (cols.into_remainder(), hd / 32 * 32);
    for (&p, v) in scores.iter().zip(values.chunks_exact(hd)) {
        for (o, &v) in rest.iter_mut().zip(&v[done..]) {
            *o += p * v.to_f32();
        }
    }
}

/// `acc[l] += p · v[col + l]` over the keys in order, for 32 columns from `col` of each
/// `hd`-long value row: a multiply, then an add, per term.
#[cfg(all(target_arch = "x86_64", target_feature = "avx2", target_feature = "f16c"))]
fn weighted_sum32(ps: &[f32], values: &[f16], hd: usize, col: usize, acc: &mut [f32; 32]) {
    use std::arch::x86_64::*;
    assert!(col + 32 <= hd && values.len() >= ps.len() * hd);
    // SAFETY: AVX2 and F16C are enabled at compile time; every load reads 32 values inside row
    // `i` of `values` (checked above), every store writes inside `acc`.
    unsafe {
        let a = acc.as_mut_ptr();
        let mut s = [_mm256_loadu_ps(a), _mm256_loadu_ps(a.add(8)), _mm256_loadu_ps(a.add(16)), _mm256_loadu_ps(a.add(24))];
        for (i, &p) in ps.iter().enumerate() {
            let p = _mm256_set1_ps(p);
            let v = values.as_ptr().add(i * hd + col) as *const __m128i;
            for (j, s) in s.iter_mut().enumerate() {
                *s = _mm256_add_ps(*s, _mm256_mul_ps(p, _mm256_cvtph_ps(_mm_loadu_si128(v.add(j)))));
            }
        }
        for (j, s) in s.iter().enumerate() {
            _mm256_storeu_ps(a.add(8 * j), *s);
        }
    }
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "avx2", target_feature = "f16c")))]
fn weighted_sum32(ps: &[f32], values: &[f16], hd: usize, col: usize, acc: &mut [f32; 32]) {
    for (&p, v) in ps.iter().zip(values.chunks_exact(hd)) {
        for l in 0..32 {
            acc[l] += p * v[col + l].to_f32();
        }
    }
}

/// Dot product in eight independent lanes.
fn dot(a: &[f32], b: &[f16]) -> f32 {
    dot4(a, [b, b, b, b])[0]
}

/// Four dot products of `a`, each in eight lanes of fused multiply-adds, then the lanes summed
/// pairwise: the same arithmetic for a key whichever of the four places it takes.
#[inline]
fn dot4(a: &[f32], bs: [&[f16]; 4]) -> [f32; 4] {
    let n = a.len() / 8 * 8;
    let acc = lanes8(&a[..n], bs.map(|b| &b[..n]));
    std::array::from_fn(|j| {
        let tail: f32 = a[n..].iter().zip(&bs[j][n..]).fold(0.0, |s, (x, y)| x.mul_add(y.to_f32(), s));
        lanes(&acc[j]) + tail
    })
}

/// The eight-lane sums of [`dot4`] over whole chunks of eight (`a.len() % 8 == 0`).
#[cfg(all(target_arch = "x86_64", target_feature = "avx2", target_feature = "fma", target_feature = "f16c"))]
fn lanes8(a: &[f32], bs: [&[f16]; 4]) -> [[f32; 8]; 4] {
    use std::arch::x86_64::*;
    assert!(bs.iter().all(|b| b.len() == a.len()));
    // SAFETY: AVX2, FMA and F16C are enabled at compile time; every load stays inside the slices.
    unsafe {
        let mut acc = [_mm256_setzero_ps(); 4];
        for i in (0..a.len()).step_by(8) {
            let x = _mm256_loadu_ps(a.as_ptr().add(i));
            for j in 0..4 {
                let b = _mm256_cvtph_ps(_mm_loadu_si128(bs[j].as_ptr().add(i) as *const __m128i));
                acc[j] = _mm256_fmadd_ps(x, b, acc[j]);
            }
        }
        acc.map(|v| std::mem::transmute::<__m256, [f32; 8]>(v))
    }
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "avx2", target_feature = "fma", target_feature = "f16c")))]
fn lanes8(a: &[f32], bs: [&[f16]; 4]) -> [[f32; 8]; 4] {
    let mut acc = [[0f32; 8]; 4];
    for i in (0..a.len()).step_by(8) {
        for j in 0..4 {
            for l in 0..8 {
                acc[j][l] = a[i + l].mul_add(bs[j][i + l].to_f32(), acc[j][l]);
            }
        }
    }
    acc
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

    #[test]
    fn each_row_is_causal_attention_over_its_own_sequence() {
        let shape = Heads { heads: 4, kv_heads: 2, hd: 16 };
        let Heads { heads, kv_heads, hd } = shape;
        // Two sequences: one with 5 cached tokens decoding 1, one reading a chunk of 3 after 2.
        let (mut a, mut b) = (LayerCache::default(), LayerCache::default());
        let (ka, va, kb, vb) = (
            values(kv_heads * 6 * hd, 1),
            values(kv_heads * 6 * hd, 2),
            values(kv_heads * 5 * hd, 3),
            values(kv_heads * 5 * hd, 4),
        );
        a.append(kv_heads, hd, &ka, &va);
        b.append(kv_heads, hd, &kb, &vb);
        let total = 4;
        let q = values(heads * total * hd, 5);
        let spans = [Span { cache: &a, past: 5, first_row: 0, rows: 1 }, Span { cache: &b, past: 2, first_row: 1, rows: 3 }];
        let out = attend(&q, total, &spans, shape);
        for row in 0..total {
            let (k, v, visible, n) = if row == 0 { (&ka, &va, 6, 6) } else { (&kb, &vb, 2 + row, 5) };
            for h in 0..heads {
                let g = h / (heads / kv_heads);
                let keys = &k[g * n * hd..][..visible * hd];
                let vals = &v[g * n * hd..][..visible * hd];
                // The cache stores f16: compare against the values it holds.
                let round = |xs: &[f32]| xs.iter().map(|&x| half::f16::from_f32(x).to_f32()).collect::<Vec<_>>();
                let want = reference(&q[(h * total + row) * hd..][..hd], &round(keys), &round(vals), hd);
                let got = &out[(row * heads + h) * hd..][..hd];
                for (g, w) in got.iter().zip(&want) {
                    assert!((*g as f64 - w).abs() < 1e-5, "row {row} head {h}: {g} vs {w}");
                }
            }
        }
    }

    #[test]
    fn a_row_gets_the_same_bits_in_a_chunk_and_alone() {
        let shape = Heads { heads: 6, kv_heads: 2, hd: 128 };
        let Heads { heads, kv_heads, hd } = shape;
        let mut cache = LayerCache::default();
        cache.append(kv_heads, hd, &values(kv_heads * 37 * hd, 7), &values(kv_heads * 37 * hd, 8));
        let q = values(heads * 37 * hd, 9);
        // All 37 rows as one prompt chunk.
        let chunk = attend(&q, 37, &[Span { cache: &cache, past: 0, first_row: 0, rows: 37 }], shape);
        // Row 30 alone, as if decoding after 30 cached tokens.
        let q30: Vec<f32> = (0..heads).flat_map(|h| q[(h * 37 + 30) * hd..][..hd].to_vec()).collect();
        let alone = attend(&q30, 1, &[Span { cache: &cache, past: 30, first_row: 0, rows: 1 }], shape);
        assert_eq!(&chunk[30 * heads * hd..31 * heads * hd], &alone[..]);
    }
}
