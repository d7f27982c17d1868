//! AVX2 kernels: one weight row against `R` activation rows (1 to 4). The weight blocks are
//! unpacked once per row group; each activation row has its own accumulators and the same
//! instruction sequence whatever `R` is, so batching never changes a result.

use super::{scale_min_k4, Q4K_BYTES, Q6K_BYTES, Q8K};
use std::arch::x86_64::*;

/// The f16 at `p` (unaligned), as f32. Shared by the x86 kernels (and [`crate::legacy_quants`]).
#[inline(always)]
pub(crate) unsafe fn f16_ptr(p: *const u8) -> f32 {
    // SAFETY: the caller gives two readable bytes at `p` on a CPU with F16C (every caller is a `target_feature` kernel).
    unsafe { _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(std::ptr::read_unaligned(p as *const u16) as i32))) }
}

/// Sum of eight i32 lanes (exact).
#[inline(always)]
unsafe fn hsum_i32(v: __m256i) -> i32 {
    // SAFETY: the caller runs on a CPU with AVX2 (every caller is a `target_feature` kernel); no memory is touched.
    unsafe {
        let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b01_00_11_10));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b10_11_00_01));
        _mm_cvtsi128_si32(s)
    }
}

#[inline(always)]
unsafe fn load(p: *const i8) -> __m256i {
    // SAFETY: the caller gives 32 readable bytes at `p` on a CPU with AVX2.
    unsafe { _mm256_loadu_si256(p as *const __m256i) }
}

/// # Safety
/// The CPU must support AVX2, FMA and F16C; `w` holds whole Q4_K blocks and every activation
/// row at least as many Q8K blocks; `acts.len() == R == out.len()`.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q4k<const R: usize>(w: &[u8], acts: &[&[Q8K]], out: &mut [f32]) {
    // SAFETY: the caller upholds this function's contract (# Safety above): the CPU features are there and every load stays inside `w` and `acts`.
    unsafe {
        let m4 = _mm256_set1_epi8(0x0F);
        let mut acc = [[0f32; R]; 2];
        for i in 0..w.len() / Q4K_BYTES {
            let b = w.as_ptr().add(i * Q4K_BYTES);
            let (d, dmin) = (f16_ptr(b), f16_ptr(b.add(2)));
            let scales = &*(b.add(4) as *const [u8; 12]);
            let mut sc = [0i16; 8];
            let mut mins = [0u8; 16];
            for j in 0..8 {
                let (s, m) = scale_min_k4(j, scales);
                sc[j] = s as i16;
                // Each min pairs with two 16-value partial sums of the activations.
                mins[2 * j] = m;
                mins[2 * j + 1] = m;
            }
            let mins16 = _mm256_cvtepu8_epi16(_mm_loadu_si128(mins.as_ptr() as *const __m128i));
            let mut isum = [_mm256_setzero_si256(); R];
            for j in 0..4 {
                let q = _mm256_loadu_si256(b.add(16 + 32 * j) as *const __m256i);
                let lo = _mm256_and_si256(q, m4);
                let hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                let (sl, sh) = (_mm256_set1_epi16(sc[2 * j]), _mm256_set1_epi16(sc[2 * j + 1]));
                for r in 0..R {
                    let a = acts[r].get_unchecked(i).qs.as_ptr().add(64 * j);
                    let pl = _mm256_madd_epi16(sl, _mm256_maddubs_epi16(lo, load(a)));
                    let ph = _mm256_madd_epi16(sh, _mm256_maddubs_epi16(hi, load(a.add(32))));
                    isum[r] = _mm256_add_epi32(isum[r], _mm256_add_epi32(pl, ph));
                }
            }
            for r in 0..R {
                let a = acts[r].get_unchecked(i);
                let bs = _mm256_loadu_si256(a.bsums.as_ptr() as *const __m256i);
                let m = hsum_i32(_mm256_madd_epi16(mins16, bs));
                acc[i & 1][r] += (m as f32).mul_add(-dmin * a.d, hsum_i32(isum[r]) as f32 * (d * a.d));
            }
        }
        for r in 0..R {
            out[r] = acc[0][r] + acc[1][r];
        }
    }
}

/// Byte shuffles that spread scale pair `p` (scales `2p`, `2p + 1`) over 8 + 8 lanes.
const fn pair_masks() -> [[u8; 16]; 8] {
    let mut m = [[0u8; 16]; 8];
    let mut p = 0;
    while p < 8 {
        let mut l = 0;
        while l < 16 {
            m[p][l] = (2 * p + l / 8) as u8;
            l += 1;
        }
        p += 1;
    }
    m
}
static PAIR_MASKS: [[u8; 16]; 8] = pair_masks();

/// # Safety
/// As [`q4k`], for Q6_K blocks.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q6k<const R: usize>(w: &[u8], acts: &[&[Q8K]], out: &mut [f32]) {
    // SAFETY: the caller upholds this function's contract (# Safety above): the CPU features are there and every load stays inside `w` and `acts`.
    unsafe {
        let m4 = _mm256_set1_epi8(0x0F);
        let m3 = _mm256_set1_epi8(3);
        let mut acc = [[0f32; R]; 2];
        for i in 0..w.len() / Q6K_BYTES {
            let b = w.as_ptr().add(i * Q6K_BYTES);
            let (ql, qh) = (b, b.add(128));
            let sc8 = _mm_loadu_si128(b.add(192) as *const __m128i);
            let d = f16_ptr(b.add(208));
            let mut isum = [_mm256_setzero_si256(); R];
            for n in 0..2 {
                let l0 = _mm256_loadu_si256(ql.add(64 * n) as *const __m256i);
                let l1 = _mm256_loadu_si256(ql.add(64 * n + 32) as *const __m256i);
                let h = _mm256_loadu_si256(qh.add(32 * n) as *const __m256i);
                let h0 = _mm256_slli_epi16(_mm256_and_si256(h, m3), 4);
                let h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m3), 4);
                let h2 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m3), 4);
                let h3 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m3), 4);
                let q = [
                    _mm256_or_si256(_mm256_and_si256(l0, m4), h0),
                    _mm256_or_si256(_mm256_and_si256(l1, m4), h1),
                    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), h2),
                    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), h3),
                ];
                for (k, qk) in q.iter().enumerate() {
                    let mask = _mm_loadu_si128(PAIR_MASKS[4 * n + k].as_ptr() as *const __m128i);
                    let s = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, mask));
                    for r in 0..R {
                        let a = acts[r].get_unchecked(i).qs.as_ptr().add(128 * n + 32 * k);
                        isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(s, _mm256_maddubs_epi16(*qk, load(a))));
                    }
                }
            }
            // The stored values are q + 32: take 32 · Σ scale · (sum of 16 activations) back off.
            let sc16 = _mm256_cvtepi8_epi16(sc8);
            for r in 0..R {
                let a = acts[r].get_unchecked(i);
                let bs = _mm256_loadu_si256(a.bsums.as_ptr() as *const __m256i);
                let offset = _mm256_slli_epi32(_mm256_madd_epi16(sc16, bs), 5);
                let total = _mm256_sub_epi32(isum[r], offset);
                acc[i & 1][r] += hsum_i32(total) as f32 * (d * a.d);
            }
        }
        for r in 0..R {
            out[r] = acc[0][r] + acc[1][r];
        }
    }
}
