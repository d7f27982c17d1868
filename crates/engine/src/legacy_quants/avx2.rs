//! AVX2 kernels: one weight row against `R` activation rows (1 to 4). Each weight block is
//! unpacked to 32 signed bytes once for all rows; each row keeps its own eight-lane
//! accumulator and the reference's float sequence (see [`super::reference`]).

use super::format_id::{format, Q4_0, Q8_0};
use super::Q8Block;
use crate::kquants::avx2::f16_ptr;
use std::arch::x86_64::*;

/// One block's 32 values as signed bytes, in order.
#[inline(always)]
unsafe fn unpack<const F: u8>(b: *const u8) -> __m256i {
    // SAFETY: the caller gives a whole block of format `F` at `b` on a CPU with AVX2.
    unsafe {
        match F {
            Q8_0 => _mm256_loadu_si256(b.add(2) as *const __m256i),
            Q4_0 => _mm256_sub_epi8(nibbles(b.add(2)), _mm256_set1_epi8(8)),
            _ => {
                // Where a value's fifth bit is clear, setting the byte's high nibble makes it
                // (low - 16) as a signed byte; where it is set, (low + 16) - 16 is just low.
                let clear = _mm256_andnot_si256(fifth_bits(b.add(2)), _mm256_set1_epi8(0xF0u8 as i8));
                _mm256_or_si256(nibbles(b.add(6)), clear)
            }
        }
    }
}

/// 16 bytes' low nibbles as bytes 0–15 and their high nibbles as bytes 16–31.
#[inline(always)]
unsafe fn nibbles(p: *const u8) -> __m256i {
    // SAFETY: the caller gives 16 readable bytes at `p` on a CPU with AVX2.
    unsafe {
        let q = _mm_loadu_si128(p as *const __m128i);
        let both = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
        _mm256_and_si256(both, _mm256_set1_epi8(0x0F))
    }
}

/// The 32 bits at `p` as 32 bytes: all ones where the bit is set (ggml's `bytes_from_bits_32`).
#[inline(always)]
unsafe fn fifth_bits(p: *const u8) -> __m256i {
    // SAFETY: the caller gives 4 readable bytes at `p` on a CPU with AVX2.
    unsafe {
        let bits = std::ptr::read_unaligned(p as *const u32) as i32;
        // Byte i gets the byte holding bit i...
        let spread = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
        let bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(bits), spread);
        // ...and every other bit set: it is all ones exactly when bit i was.
        let others = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);
        _mm256_cmpeq_epi8(_mm256_or_si256(bytes, others), _mm256_set1_epi64x(-1))
    }
}

/// # Safety
/// The CPU must support AVX2, FMA and F16C; `w` holds `blocks` blocks of format `F` and every
/// activation row at least as many; `acts.len() == R == out.len()`.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn dot<const R: usize, const F: u8>(w: &[u8], blocks: usize, acts: &[&[Q8Block]], out: &mut [f32]) {
    // SAFETY: the caller upholds this function's contract (# Safety above): the CPU features
    // are there and every load stays inside `w` and `acts`.
    unsafe {
        let ones = _mm256_set1_epi16(1);
        let mut acc = [_mm256_setzero_ps(); R];
        let bytes = format(F).block_bytes();
        for i in 0..blocks {
            let b = w.as_ptr().add(i * bytes);
            let d = f16_ptr(b);
            let q = unpack::<F>(b);
            // maddubs multiplies unsigned by signed bytes: |w| times a with w's sign. The pair
            // sums stay within i16 (2 × 128 × 127).
            let abs = _mm256_sign_epi8(q, q);
            for r in 0..R {
                let a = acts[r].get_unchecked(i);
                let signed = _mm256_sign_epi8(_mm256_loadu_si256(a.qs.as_ptr() as *const __m256i), q);
                let sums = _mm256_madd_epi16(_mm256_maddubs_epi16(abs, signed), ones);
                let scale = _mm256_set1_ps(d * a.d);
                acc[r] = _mm256_add_ps(acc[r], _mm256_mul_ps(scale, _mm256_cvtepi32_ps(sums)));
            }
        }
        for r in 0..R {
            let s = _mm_add_ps(_mm256_castps256_ps128(acc[r]), _mm256_extractf128_ps(acc[r], 1));
            let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
            out[r] = _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
        }
    }
}
