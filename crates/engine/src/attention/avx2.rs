//! Attention eight lanes at a time (AVX2, FMA, F16C), with the portable code's bits: every
//! dot product is eight lanes of fused multiply-adds over the head's values in order, summed
//! pairwise ([`super::lanes`]); every output value one chain of fused multiply-adds over the
//! keys in order; the same `e^x` ([`crate::rowwise::exp`]).

use super::{group_body, lanes, tail_dot, tail_sums, Stored, AVX2, KEYS_AHEAD, VALUE_BLOCK};
use crate::rowwise::exp;
use std::arch::x86_64::*;

/// [`group_body`] compiled for AVX2, FMA and F16C (the intrinsics it calls inline into it).
///
/// # Safety
/// The CPU has those features.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn group<const N: usize, S: Stored>(qs: &[&[f32]], keys: S, values: S, scores: &mut Vec<f32>, out: &mut [f32]) {
    group_body::<N, S, AVX2>(qs, keys, values, scores, out)
}

/// The dot products of `N` queries with key `j` (see [`super::dots`]).
///
/// # Safety
/// The CPU has AVX2, FMA and F16C, and the caller is compiled for them.
#[inline(always)]
pub(super) unsafe fn dots<const N: usize, S: Stored>(qs: [&[f32]; N], keys: S, j: usize) -> [f32; N] {
    let hd = qs[0].len();
    let n8 = hd / 8 * 8;
    assert!(qs.iter().all(|q| q.len() == hd) && (j + 1) * hd <= keys.values());
    // SAFETY: the CPU has the features (the caller's contract); every load reads 8 values below
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

/// The scaled scores of the keys in whole eights, `scores[h·len + j]`, the same bits as
/// [`dots`] gives them: two keys at a time share each query load, and each eight keys' lane
/// sums are added by one transposing tree of horizontal additions, the same pairs as
/// [`super::lanes`]. Returns how many keys it scored.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C, and the caller is compiled for them. `hd` is a multiple of 8.
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
        // Each head's eight keys' accumulators, until they are summed.
        let mut eight = [[_mm256_setzero_ps(); 8]; N];
        for j0 in (0..whole).step_by(8) {
            for j in j0 + KEYS_AHEAD..j0 + KEYS_AHEAD + 8 {
                keys.prefetch(j, hd);
            }
            for pair in 0..4 {
                let (a, b) = ((j0 + 2 * pair) * hd, (j0 + 2 * pair + 1) * hd);
                let mut acc = [[_mm256_setzero_ps(); 2]; N];
                for c in (0..hd).step_by(8) {
                    let (ka, kb) = (keys.load8(a + c), keys.load8(b + c));
                    for h in 0..N {
                        let q = _mm256_loadu_ps(qs[h].as_ptr().add(c));
                        acc[h][0] = _mm256_fmadd_ps(q, ka, acc[h][0]);
                        acc[h][1] = _mm256_fmadd_ps(q, kb, acc[h][1]);
                    }
                }
                for h in 0..N {
                    eight[h][2 * pair] = acc[h][0];
                    eight[h][2 * pair + 1] = acc[h][1];
                }
            }
            store_scores(&eight, scale, scores, len, j0);
        }
    }
    whole
}

/// Each head's eight keys' scores, summed from their lanes and scaled, to `scores[h·len + j0..]`.
///
/// # Safety
/// The CPU has AVX2, and the caller is compiled for it; `j0 + 8 <= len` and `scores` holds `N·len`.
#[inline(always)]
pub(super) unsafe fn store_scores<const N: usize>(
    eight: &[[__m256; 8]; N],
    scale: f32,
    scores: &mut [f32],
    len: usize,
    j0: usize,
) {
    debug_assert!(j0 + 8 <= len && scores.len() >= N * len);
    // SAFETY: stores of 8 at h·len + j0, below N·len (the caller's contract).
    unsafe {
        let s = _mm256_set1_ps(scale);
        for (h, lanes8) in eight.iter().enumerate() {
            _mm256_storeu_ps(scores.as_mut_ptr().add(h * len + j0), _mm256_mul_ps(sum_lanes8(lanes8), s));
        }
    }
}

/// Eight vectors' lane sums as one vector, each `((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))`
/// as [`super::lanes`] adds them: horizontal additions pair the lanes and transpose as they go.
///
/// # Safety
/// The CPU has AVX, and the caller is compiled for it.
#[inline(always)]
unsafe fn sum_lanes8(a: &[__m256; 8]) -> __m256 {
    // [x0+x1, x2+x3, y0+y1, y2+y3 | x4+x5, x6+x7, y4+y5, y6+y7] for hadd(x, y), so after two
    // rounds the low half holds each vector's first four lanes' sum, the high half the last four's.
    // SAFETY: register arithmetic only, on a CPU with AVX (the caller's contract).
    unsafe {
        let (t0, t1) = (_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
        let (t2, t3) = (_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
        let (u0, u1) = (_mm256_hadd_ps(t0, t1), _mm256_hadd_ps(t2, t3));
        _mm256_add_ps(_mm256_permute2f128_ps::<0x20>(u0, u1), _mm256_permute2f128_ps::<0x31>(u0, u1))
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
