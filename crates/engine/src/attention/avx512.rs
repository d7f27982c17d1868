//! Attention sixteen lanes at a time (AVX-512F), with the same bits as the eight-lane code
//! ([`super::avx2`]) and the portable one. A score is eight lanes summed over a key, so two keys
//! share a register: one half each, against the query duplicated in both halves. An output
//! value is one chain over the keys, so a register holds sixteen columns.

use super::avx2::store_scores;
use super::{group_body, Stored, AVX512, KEYS_AHEAD, VALUE_BLOCK};
use std::arch::x86_64::*;

/// Query heads up to which a group's sums of sixty-four columns fit the thirty-two registers
/// with the values they multiply (four per head, and four of values).
const WIDE_GROUP: usize = 6;

/// [`group_body`] compiled for AVX-512F, AVX2, FMA and F16C.
///
/// # Safety
/// The CPU has those features.
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
pub(super) unsafe fn group<const N: usize, S: Stored>(qs: &[&[f32]], keys: S, values: S, scores: &mut Vec<f32>, out: &mut [f32]) {
    group_body::<N, S, AVX512>(qs, keys, values, scores, out)
}

/// [`super::avx2::scores_by_eight`], four keys at a time in two registers.
///
/// # Safety
/// The CPU has AVX-512F, AVX2, FMA and F16C, and the caller is compiled for them. `hd` is a
/// multiple of 8.
#[inline(always)]
pub(super) unsafe fn scores_by_eight<const N: usize, S: Stored>(
    qs: [&[f32]; N],
    keys: S,
    scale: f32,
    scores: &mut [f32],
) -> usize {
    let hd = qs[0].len();
    let len = keys.values() / hd;
    let whole = len / 8 * 8;
    assert!(hd.is_multiple_of(8) && qs.iter().all(|q| q.len() == hd) && scores.len() >= N * len);
    // SAFETY: the CPU has the features (the caller's contract); loads read 8 values at column
    // c < hd of keys below `whole` and of each query; stores write 8 scores below N·len.
    unsafe {
        let mut eight = [[_mm256_setzero_ps(); 8]; N];
        for j0 in (0..whole).step_by(8) {
            for j in j0 + KEYS_AHEAD..j0 + KEYS_AHEAD + 8 {
                keys.prefetch(j, hd);
            }
            for four in [0, 4] {
                let row = |k: usize| (j0 + four + k) * hd;
                let mut acc = [[_mm512_setzero_ps(); 2]; N];
                for c in (0..hd).step_by(8) {
                    let (k01, k23) = (keys.load_pair8(row(0) + c, row(1) + c), keys.load_pair8(row(2) + c, row(3) + c));
                    for h in 0..N {
                        // The query's eight values in both halves.
                        let q = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_loadu_pd(qs[h].as_ptr().add(c) as *const f64)));
                        acc[h][0] = _mm512_fmadd_ps(q, k01, acc[h][0]);
                        acc[h][1] = _mm512_fmadd_ps(q, k23, acc[h][1]);
                    }
                }
                for h in 0..N {
                    for (k, a) in acc[h].iter().enumerate() {
                        eight[h][four + 2 * k] = _mm512_castps512_ps256(*a);
                        eight[h][four + 2 * k + 1] = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(*a)));
                    }
                }
            }
            store_scores(&eight, scale, scores, len, j0);
        }
    }
    whole
}

/// [`super::avx2::weighted_sums`], thirty-two values of the `N` heads at a time.
///
/// # Safety
/// The CPU has AVX-512F, AVX2, FMA and F16C, and the caller is compiled for them. `hd` is a
/// multiple of 32.
#[inline(always)]
pub(super) unsafe fn weighted_sums<const N: usize, S: Stored>(scores: &[f32], len: usize, values: S, hd: usize, out: &mut [f32]) {
    assert!(hd.is_multiple_of(32) && scores.len() >= N * len && values.values() >= len * hd && out.len() >= N * hd);
    // SAFETY: the CPU has the features (the caller's contract); loads read 16 values at column
    // col < hd of value rows j < len, stores write 16 at column col of head rows h < N, and
    // scores are read below N·len (all checked above).
    unsafe {
        if N <= WIDE_GROUP && hd.is_multiple_of(64) {
            sums_by::<N, S, 4>(scores, len, values, hd, out)
        } else {
            sums_by::<N, S, 2>(scores, len, values, hd, out)
        }
    }
}

/// [`weighted_sums`] in passes of `R` registers (16·R columns) per head.
///
/// # Safety
/// As [`weighted_sums`], and `hd` is a multiple of 16·R.
#[inline(always)]
unsafe fn sums_by<const N: usize, S: Stored, const R: usize>(scores: &[f32], len: usize, values: S, hd: usize, out: &mut [f32]) {
    // SAFETY: the caller's contract, as in weighted_sums.
    unsafe {
        for start in (0..len).step_by(VALUE_BLOCK) {
            let end = (start + VALUE_BLOCK).min(len);
            for col in (0..hd).step_by(16 * R) {
                let mut acc = [[_mm512_setzero_ps(); R]; N];
                if start > 0 {
                    for (h, a) in acc.iter_mut().enumerate() {
                        let o = out.as_ptr().add(h * hd + col);
                        *a = std::array::from_fn(|r| _mm512_loadu_ps(o.add(16 * r)));
                    }
                }
                for j in start..end {
                    if col == 0 {
                        values.prefetch(j + VALUE_BLOCK, hd);
                    }
                    let v: [__m512; R] = std::array::from_fn(|r| values.load16(j * hd + col + 16 * r));
                    for (h, a) in acc.iter_mut().enumerate() {
                        let p = _mm512_set1_ps(*scores.get_unchecked(h * len + j));
                        for (a, v) in a.iter_mut().zip(&v) {
                            *a = _mm512_fmadd_ps(p, *v, *a);
                        }
                    }
                }
                for (h, a) in acc.iter().enumerate() {
                    let o = out.as_mut_ptr().add(h * hd + col);
                    for (r, a) in a.iter().enumerate() {
                        _mm512_storeu_ps(o.add(16 * r), *a);
                    }
                }
            }
        }
    }
}
