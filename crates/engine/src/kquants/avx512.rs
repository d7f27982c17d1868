//! AVX-512 (VNNI) kernels: the AVX2 kernels' arithmetic on 64-byte registers, with `vpdpwssd`
//! folding the per-sub-block scale into the accumulation. Same contract as [`super::avx2`]: one
//! weight row against `R` activation rows, each row's arithmetic independent of `R`.

use super::{Q8K, Q4K_BYTES, Q6K_BYTES};
use super::avx2::f16_ptr;
use std::arch::x86_64::*;

pub fn supported() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512vnni")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
}

/// Lane indices that spread i16 scales over a 64-byte register: `W` lanes each, from `first`.
const fn spread<const W: usize>(first: usize) -> [i16; 32] {
    let mut idx = [0i16; 32];
    let mut l = 0;
    while l < 32 {
        idx[l] = (first + l / W) as i16;
        l += 1;
    }
    idx
}
static Q4K_SCALE_IDX: [[i16; 32]; 4] = [spread::<16>(0), spread::<16>(2), spread::<16>(4), spread::<16>(6)];
static Q6K_SCALE_IDX: [[i16; 32]; 4] = [spread::<8>(0), spread::<8>(4), spread::<8>(8), spread::<8>(12)];

#[inline(always)]
unsafe fn load_idx(idx: &[i16; 32]) -> __m512i {
    _mm512_loadu_si512(idx.as_ptr() as *const _)
}

/// Unpacks Q4_K's twelve scale bytes into eight scales then eight minimums (ggml's `utmp`).
#[inline(always)]
pub(crate) fn q4k_scales_mins(scales: &[u8; 12]) -> [u32; 4] {
    const K1: u32 = 0x3f3f_3f3f;
    const K2: u32 = 0x0f0f_0f0f;
    const K3: u32 = 0x0303_0303;
    let w = |i: usize| u32::from_le_bytes([scales[4 * i], scales[4 * i + 1], scales[4 * i + 2], scales[4 * i + 3]]);
    let (u0, u1, u2) = (w(0), w(1), w(2));
    [u0 & K1, (u2 & K2) | (((u0 >> 6) & K3) << 4), u1 & K1, ((u2 >> 4) & K2) | (((u1 >> 6) & K3) << 4)]
}

/// # Safety
/// The CPU must pass [`supported`]; `w` holds whole Q4_K blocks and every activation row at
/// least as many Q8K blocks; `acts.len() == R == out.len()`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
pub unsafe fn q4k<const R: usize>(w: &[u8], acts: &[&[Q8K]], out: &mut [f32]) {
    let m4 = _mm512_set1_epi8(0x0F);
    // The lower half of a register keeps the low nibbles, the upper half the high ones: with a
    // 32-byte run loaded into both halves, that is two sub-blocks in the activations' order.
    let nibble_shift = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
    let idx = [0, 1, 2, 3].map(|j| load_idx(&Q4K_SCALE_IDX[j]));
    let mut acc = [[0f32; R]; 2];
    for i in 0..w.len() / Q4K_BYTES {
        let b = w.as_ptr().add(i * Q4K_BYTES);
        let (d, dmin) = (f16_ptr(b), f16_ptr(b.add(2)));
        let u = q4k_scales_mins(&*(b.add(4) as *const [u8; 12]));
        // Eight scales then eight minimums, as 16-bit lanes.
        let sm = _mm256_cvtepu8_epi16(_mm_set_epi32(u[3] as i32, u[2] as i32, u[1] as i32, u[0] as i32));
        let mins = _mm256_extracti128_si256(sm, 1);
        let sc = _mm512_castsi256_si512(sm);
        let mut q = [_mm512_setzero_si512(); 4];
        let mut s = [_mm512_setzero_si512(); 4];
        for j in 0..4 {
            let v = _mm512_broadcast_i64x4(_mm256_loadu_si256(b.add(16 + 32 * j) as *const __m256i));
            q[j] = _mm512_and_si512(_mm512_srlv_epi16(v, nibble_shift), m4);
            s[j] = _mm512_permutexvar_epi16(idx[j], sc);
        }
        for r in 0..R {
            let a = acts[r].get_unchecked(i);
            let mut isum = _mm512_setzero_si512();
            for j in 0..4 {
                let x = _mm512_loadu_si512(a.qs.as_ptr().add(64 * j) as *const _);
                isum = _mm512_dpwssd_epi32(isum, _mm512_maddubs_epi16(q[j], x), s[j]);
            }
            // Each minimum pairs with the sum of its 32 activations (two 16-value sums).
            let bs = _mm256_loadu_si256(a.bsums.as_ptr() as *const __m256i);
            let pairs = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
            let m = _mm_madd_epi16(mins, pairs);
            let m = _mm_add_epi32(m, _mm_shuffle_epi32(m, 0b01_00_11_10));
            let m = _mm_cvtsi128_si32(_mm_add_epi32(m, _mm_shuffle_epi32(m, 0b10_11_00_01)));
            acc[i & 1][r] += (m as f32).mul_add(-dmin * a.d, _mm512_reduce_add_epi32(isum) as f32 * (d * a.d));
        }
    }
    for r in 0..R {
        out[r] = acc[0][r] + acc[1][r];
    }
}

/// # Safety
/// As [`q4k`], for Q6_K blocks.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
pub unsafe fn q6k<const R: usize>(w: &[u8], acts: &[&[Q8K]], out: &mut [f32]) {
    let m4 = _mm512_set1_epi8(0x0F);
    let m3 = _mm512_set1_epi8(3);
    // Two high bits per value come from one qh byte, at shifts 0/2 (values 0..64 of a half)
    // and 4/6 (values 64..128).
    let shift_a = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    let shift_b = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
    let idx = [0, 1, 2, 3].map(|j| load_idx(&Q6K_SCALE_IDX[j]));
    let mut acc = [[0f32; R]; 2];
    for i in 0..w.len() / Q6K_BYTES {
        let b = w.as_ptr().add(i * Q6K_BYTES);
        let sc8 = _mm_loadu_si128(b.add(192) as *const __m128i);
        let sc16y = _mm256_cvtepi8_epi16(sc8);
        let sc16 = _mm512_castsi256_si512(sc16y);
        let d = f16_ptr(b.add(208));
        let mut q = [_mm512_setzero_si512(); 4];
        for n in 0..2 {
            let ql = _mm512_loadu_si512(b.add(64 * n) as *const _);
            let qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(b.add(128 + 32 * n) as *const __m256i));
            let ha = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift_a), m3), 4);
            let hb = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift_b), m3), 4);
            q[2 * n] = _mm512_or_si512(_mm512_and_si512(ql, m4), ha);
            q[2 * n + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), hb);
        }
        let s = [0, 1, 2, 3].map(|j| _mm512_permutexvar_epi16(idx[j], sc16));
        for r in 0..R {
            let a = acts[r].get_unchecked(i);
            let mut isum = _mm512_setzero_si512();
            for j in 0..4 {
                let x = _mm512_loadu_si512(a.qs.as_ptr().add(64 * j) as *const _);
                isum = _mm512_dpwssd_epi32(isum, _mm512_maddubs_epi16(q[j], x), s[j]);
            }
            // The stored values are q + 32: take 32 · Σ scale · (sum of 16 activations) back off.
            let bs = _mm256_loadu_si256(a.bsums.as_ptr() as *const __m256i);
            let offset = _mm512_zextsi256_si512(_mm256_slli_epi32(_mm256_madd_epi16(sc16y, bs), 5));
            let total = _mm512_sub_epi32(isum, offset);
            acc[i & 1][r] += _mm512_reduce_add_epi32(total) as f32 * (d * a.d);
        }
    }
    for r in 0..R {
        out[r] = acc[0][r] + acc[1][r];
    }
}
