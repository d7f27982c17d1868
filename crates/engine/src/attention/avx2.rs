//! Attention eight lanes at a time (AVX2, FMA, F16C), with the portable code's bits: every
//! score is one chain of fused multiply-adds over the key's values in order, every output
//! value one chain over the keys in order; the same `e^x` ([`crate::rowwise::exp`]).

use super::{group_body, tail_sums, Keys, Stored, AVX2, VALUE_BLOCK};
use crate::kv_cache::KEY_TILE;
use crate::rowwise::exp;
use std::arch::x86_64::*;

/// [`group_body`] compiled for AVX2, FMA and F16C (the intrinsics it calls inline into it).
///
/// # Safety
/// The CPU has those features.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn group<const N: usize, K: Keys, S: Stored>(
    qs: &[&[f32]],
    keys: K,
    values: S,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    group_body::<N, K, S, AVX2>(qs, keys, values, scores, out)
}

/// The scaled scores of every key, `scores[h·len + j]`, the same bits as
/// [`super::scores_portable`]: each half tile's eight keys in the lanes of a register, one chain
/// of fused multiply-adds over the columns per key.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C, and the caller is compiled for them.
#[inline(always)]
pub(super) unsafe fn scores<const N: usize, K: Keys>(qs: [&[f32]; N], keys: K, scale: f32, scores: &mut [f32]) {
    let (len, hd, block) = (keys.len(), keys.hd(), keys.block());
    assert!(qs.iter().all(|q| q.len() == hd) && scores.len() >= N * len);
    // SAFETY: the CPU has the features (the caller's contract); the tiles that hold keys below
    // len are stored whole, columns are below hd, and stores write keys below len.
    unsafe {
        for t in 0..len.div_ceil(KEY_TILE) {
            let mut acc = [[_mm256_setzero_ps(); 2]; N];
            for b0 in (0..hd).step_by(block) {
                let sc = [keys.scale8(t, 0, b0), keys.scale8(t, 1, b0)];
                for c in b0..(b0 + block).min(hd) {
                    let k = [keys.column8(t, 0, c, sc[0]), keys.column8(t, 1, c, sc[1])];
                    for (h, a) in acc.iter_mut().enumerate() {
                        let q = _mm256_set1_ps(*qs[h].get_unchecked(c));
                        a[0] = _mm256_fmadd_ps(q, k[0], a[0]);
                        a[1] = _mm256_fmadd_ps(q, k[1], a[1]);
                    }
                }
            }
            let s = _mm256_set1_ps(scale);
            for (h, a) in acc.iter().enumerate() {
                for (half, a) in a.iter().enumerate() {
                    let j = t * KEY_TILE + 8 * half;
                    let dst = &mut scores[h * len..(h + 1) * len];
                    if j + 8 <= len {
                        _mm256_storeu_ps(dst.as_mut_ptr().add(j), _mm256_mul_ps(*a, s));
                    } else if j < len {
                        let lanes = std::mem::transmute::<__m256, [f32; 8]>(_mm256_mul_ps(*a, s));
                        dst[j..].copy_from_slice(&lanes[..len - j]);
                    }
                }
            }
        }
    }
}

/// `s[i] = e^(s[i] - max)` for the whole eights of `s` and the rest, with `max` the largest
/// (NaN ignored, as `f32::max` does) and [`exp`]'s bits.
///
/// # Safety
/// The CPU has AVX2, and the caller is compiled for it.
#[inline(always)]
pub(super) unsafe fn exp_less_max(s: &mut [f32]) {
    let whole = s.len() / 8 * 8;
    // SAFETY: loads and stores of 8 below `whole`; the CPU has AVX2 (the caller's contract).
    unsafe {
        let p = s.as_mut_ptr();
        let mut m = _mm256_set1_ps(f32::NEG_INFINITY);
        for i in (0..whole).step_by(8) {
            // A NaN in the first operand gives the second: NaN is skipped, as f32::max skips it.
            m = _mm256_max_ps(_mm256_loadu_ps(p.add(i)), m);
        }
        let lanes = std::mem::transmute::<__m256, [f32; 8]>(m);
        let max = s[whole..].iter().chain(&lanes).fold(f32::NEG_INFINITY, |m, &x| m.max(x));
        let mv = _mm256_set1_ps(max);
        for i in (0..whole).step_by(8) {
            _mm256_storeu_ps(p.add(i), exp8(_mm256_sub_ps(_mm256_loadu_ps(p.add(i)), mv)));
        }
        for x in &mut s[whole..] {
            *x = exp(*x - max);
        }
    }
}

/// [`exp`] of eight values, step for step (no fused operations where it has none), so each
/// lane has its bits.
///
/// # Safety
/// The CPU has AVX2, and the caller is compiled for it.
#[inline(always)]
pub(crate) unsafe fn exp8(x: __m256) -> __m256 {
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    // SAFETY: register arithmetic only, on a CPU with AVX2 (the caller's contract).
    unsafe {
        // Clamped as f32::clamp does, NaN kept: max and min return their second operand for NaN.
        let x = _mm256_min_ps(_mm256_set1_ps(88.3), _mm256_max_ps(_mm256_set1_ps(-87.3), x));
        let n = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(
            x,
            _mm256_set1_ps(std::f32::consts::LOG2_E),
        ));
        let r =
            _mm256_sub_ps(_mm256_sub_ps(x, _mm256_mul_ps(n, _mm256_set1_ps(LN2_HI))), _mm256_mul_ps(n, _mm256_set1_ps(LN2_LO)));
        let mut p = _mm256_set1_ps(1.0 / 5040.0);
        for c in [1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
            p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(c));
        }
        // n is a whole number in [-126, 128], so the conversion is exact (NaN's lanes stay NaN through p).
        let scale = _mm256_slli_epi32::<23>(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)));
        _mm256_mul_ps(p, _mm256_castsi256_ps(scale))
    }
}

/// `out[h·hd + c] = Σ_j scores[h·len + j] · values[j·hd + c]` (see [`super::tail_sums`]),
/// sixteen values of the `N` heads at a time, [`VALUE_BLOCK`] keys at a time: the sums carry
/// through `out` from one block to the next, so each is still one chain over the keys in
/// order, and the block's rows stay in the second-level cache while every column of them is
/// summed. (Without the blocks, each column's pass read a deep cache's values from memory
/// again: 8,192 positions of one KV head's values are 2 MiB.)
///
/// # Safety
/// The CPU has AVX2, FMA and F16C, and the caller is compiled for them.
#[inline(always)]
pub(super) unsafe fn weighted_sums<const N: usize, S: Stored>(scores: &[f32], len: usize, values: S, hd: usize, out: &mut [f32]) {
    let n16 = hd / 16 * 16;
    assert!(scores.len() >= N * len && values.values() >= len * hd && out.len() >= N * hd);
    // SAFETY: the CPU has the features (the caller's contract); loads read 8 values at column
    // col < n16 of value rows j < len, stores write 8 at column col of head rows h < N, and
    // scores are read below N·len (all checked above).
    unsafe {
        for start in (0..len).step_by(VALUE_BLOCK) {
            let end = (start + VALUE_BLOCK).min(len);
            for col in (0..n16).step_by(16) {
                let mut acc = [[_mm256_setzero_ps(); 2]; N];
                if start > 0 {
                    for (h, a) in acc.iter_mut().enumerate() {
                        let o = out.as_ptr().add(h * hd + col);
                        *a = [_mm256_loadu_ps(o), _mm256_loadu_ps(o.add(8))];
                    }
                }
                for j in start..end {
                    if col == 0 {
                        // The next block's rows start to arrive while this one is summed.
                        values.prefetch(j + VALUE_BLOCK, hd);
                    }
                    let (v0, v1) = (values.load8(j * hd + col), values.load8(j * hd + col + 8));
                    for (h, a) in acc.iter_mut().enumerate() {
                        let p = _mm256_set1_ps(*scores.get_unchecked(h * len + j));
                        a[0] = _mm256_fmadd_ps(p, v0, a[0]);
                        a[1] = _mm256_fmadd_ps(p, v1, a[1]);
                    }
                }
                for (h, a) in acc.iter().enumerate() {
                    let o = out.as_mut_ptr().add(h * hd + col);
                    _mm256_storeu_ps(o, a[0]);
                    _mm256_storeu_ps(o.add(8), a[1]);
                }
            }
        }
    }
    // Columns past the last whole sixteen (none for head sizes of 64 or 128).
    tail_sums::<N, S>(scores, len, values, hd, n16, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp8_has_exps_bits() {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
            return;
        }
        #[target_feature(enable = "avx2,fma")]
        fn eight(x: [f32; 8]) -> [f32; 8] {
            // SAFETY: the enclosing function's features, checked above.
            unsafe { std::mem::transmute::<__m256, [f32; 8]>(exp8(std::mem::transmute::<[f32; 8], __m256>(x))) }
        }
        let mut xs: Vec<f32> = (0..=400_000).map(|i| -100.0 + 200.0 * i as f32 / 400_000.0).collect();
        xs.extend([0.0, -0.0, 1e-30, -1e-30, 88.3, -87.3, 1e30, -1e30, f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE]);
        while !xs.len().is_multiple_of(8) {
            xs.push(0.5);
        }
        for c in xs.chunks_exact(8) {
            // SAFETY: the CPU has AVX2 and FMA (checked above).
            let got = unsafe { eight(c.try_into().unwrap()) };
            for (x, g) in c.iter().zip(got) {
                assert_eq!(g.to_bits(), exp(*x).to_bits(), "e^{x}");
            }
        }
        // SAFETY: as above.
        assert!(unsafe { eight([f32::NAN; 8]) }.iter().all(|v| v.is_nan()));
    }
}
