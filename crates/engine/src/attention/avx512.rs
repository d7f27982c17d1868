//! Attention sixteen lanes at a time (AVX-512F), with the same bits as the eight-lane code
//! ([`super::avx2`]) and the portable one. A score is one chain over a key's columns, so a
//! register holds a tile's sixteen keys; an output value is one chain over the keys, so a
//! register holds sixteen columns.

use super::{group_body, Keys, Stored, AVX512, VALUE_BLOCK};
use crate::kv_cache::KEY_TILE;
use std::arch::x86_64::*;

/// How many tiles ahead of its loads the scoring asks for keys (32 KiB of f16 keys of 128
/// values). Without it, a deep step waited on its key loads (a quarter of attention's samples
/// sat on one of them), the CPU's own prefetcher not running far enough ahead to let the
/// arithmetic overlap the memory. Criterion's `decode attention`, 1.5B, two interleaved rounds
/// against none (0): f16 at 8,192 keys 11.1-12.5 ms against 13.7-14.6, at 4,096 5.6-6.1
/// against 7.1-7.4; the 8-bit cache 11.8-12.4 against 13.2-13.3 and 5.4-6.0 against 6.6-7.1.
/// 4 and 16 tiles measured no better.
const KEYS_AHEAD: usize = 8;

/// Query heads up to which a group's sums of sixty-four columns fit the thirty-two registers
/// with the values they multiply (four per head, and four of values).
const WIDE_GROUP: usize = 6;

/// [`group_body`] compiled for AVX-512F, AVX2, FMA and F16C.
///
/// # Safety
/// The CPU has those features.
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
pub(super) unsafe fn group<const N: usize, K: Keys, S: Stored>(
    qs: &[&[f32]],
    keys: K,
    values: S,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    group_body::<N, K, S, AVX512>(qs, keys, values, scores, out)
}

/// The scaled scores of every key, `scores[h·len + j]`, sixteen keys of a tile in the lanes of
/// a register: one chain of fused multiply-adds over the columns per key, as
/// [`super::scores_portable`] computes it. Two tiles at a time, so that a group of few heads
/// still has enough independent chains to keep the multipliers busy.
///
/// # Safety
/// The CPU has AVX-512F, AVX2, FMA and F16C, and the caller is compiled for them.
#[inline(always)]
pub(super) unsafe fn scores<const N: usize, K: Keys>(qs: [&[f32]; N], keys: K, scale: f32, scores: &mut [f32]) {
    let (len, tiles) = (keys.len(), keys.len().div_ceil(KEY_TILE));
    assert!(qs.iter().all(|q| q.len() == keys.hd()) && scores.len() >= N * len);
    // SAFETY: the CPU has the features (the caller's contract); tiles below `tiles` are stored
    // whole and columns below hd, and stores write the lanes below len (scores_of).
    unsafe {
        for t in (0..tiles / 2 * 2).step_by(2) {
            scores_of::<N, K, 2>(qs, keys, scale, t, scores);
        }
        if tiles % 2 == 1 {
            scores_of::<N, K, 1>(qs, keys, scale, tiles - 1, scores);
        }
    }
}

/// [`scores`] of the `R` tiles from `t`.
///
/// # Safety
/// As [`scores`], and tiles `t..t + R` are stored.
#[inline(always)]
unsafe fn scores_of<const N: usize, K: Keys, const R: usize>(qs: [&[f32]; N], keys: K, scale: f32, t: usize, scores: &mut [f32]) {
    let (len, hd, block) = (keys.len(), keys.hd(), keys.block());
    // SAFETY: the caller's contract; each store writes the lanes of keys below len.
    unsafe {
        let mut acc = [[_mm512_setzero_ps(); R]; N];
        for b0 in (0..hd).step_by(block) {
            let sc: [__m512; R] = std::array::from_fn(|r| keys.scale16(t + r, b0));
            for c in b0..(b0 + block).min(hd) {
                for r in 0..R {
                    keys.prefetch16(t + r + KEYS_AHEAD, c);
                }
                let k: [__m512; R] = std::array::from_fn(|r| keys.column16(t + r, c, sc[r]));
                for (h, a) in acc.iter_mut().enumerate() {
                    let q = _mm512_set1_ps(*qs[h].get_unchecked(c));
                    for (a, k) in a.iter_mut().zip(&k) {
                        *a = _mm512_fmadd_ps(q, *k, *a);
                    }
                }
            }
        }
        let s = _mm512_set1_ps(scale);
        for (h, a) in acc.iter().enumerate() {
            for (r, a) in a.iter().enumerate() {
                let j = (t + r) * KEY_TILE;
                let live = len.saturating_sub(j).min(KEY_TILE);
                let mask = ((1u32 << live) - 1) as __mmask16;
                _mm512_mask_storeu_ps(scores.as_mut_ptr().add(h * len + j), mask, _mm512_mul_ps(*a, s));
            }
        }
    }
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
