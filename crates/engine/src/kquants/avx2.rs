//! AVX2 kernels, against `R` activation rows (1 to 4), each with its own accumulators and the
//! same instruction sequence whatever `R` is, so batching never changes a result:
//! - packed kernels ([`q4k_packed`], [`q6k_packed`]): sixteen weight rows in the layout of
//!   [`super::packed`], eight per register, what the engine runs on a CPU without AVX-512;
//! - row kernels ([`q4k`], [`q6k`]): one weight row as the file stores it, for a matrix whose
//!   row count is not a multiple of sixteen.

use super::packed::{prefetch, ActRow, Q4K_PACKED, Q6K_PACKED};
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

// The packed kernels: the layout the AVX-512 kernels read ([`super::packed`]), eight weight rows
// per register (one half of a packed line) against up to four activation rows. `vpmaddubsw` has
// no 32-bit accumulation, so four bytes of each row make two i16 sums; those add up in i16
// over a sub-block (they fit, see each kernel), and one `vpmaddwd` by the sub-block's scale
// per eight rows turns them into exact i32 sums. The row kernels above spend that `vpmaddwd`
// on every 32 values, and a horizontal sum per block and row on top.

/// Four activations from `x`, in every lane.
#[inline(always)]
unsafe fn bcast(x: *const i8) -> __m256i {
    // SAFETY: the caller gives four readable bytes at `x` on a CPU with AVX2.
    unsafe { _mm256_set1_epi32(std::ptr::read_unaligned(x as *const i32)) }
}

/// Eight unsigned bytes at `p`, each twice as i16 in its 32-bit lane (a pair for `vpmaddwd`).
#[inline(always)]
unsafe fn u8_pairs(p: *const u8) -> __m256i {
    // SAFETY: the caller gives eight readable bytes at `p` on a CPU with AVX2.
    unsafe {
        let s = _mm256_cvtepu8_epi32(_mm_loadl_epi64(p as *const __m128i));
        _mm256_or_si256(s, _mm256_slli_epi32(s, 16))
    }
}

/// As [`u8_pairs`], for signed bytes.
#[inline(always)]
unsafe fn i8_pairs(p: *const u8) -> __m256i {
    // SAFETY: the caller gives eight readable bytes at `p` on a CPU with AVX2.
    unsafe {
        let s = _mm256_cvtepi8_epi32(_mm_loadl_epi64(p as *const __m128i));
        _mm256_blend_epi16::<0xAA>(s, _mm256_slli_epi32(s, 16))
    }
}

/// Adds `v` to the eight sums at `at` (the kernels keep their float sums in memory: sixteen
/// registers hold the products' sums, and these change once per block).
#[inline(always)]
unsafe fn add_to(at: &mut [f32], v: __m256) {
    // SAFETY: the caller gives eight floats at `at` on a CPU with AVX2.
    unsafe { _mm256_storeu_ps(at.as_mut_ptr(), _mm256_add_ps(_mm256_loadu_ps(at.as_ptr()), v)) }
}

/// The even and odd blocks' sums added, into `out` (the reference's last step).
#[inline(always)]
unsafe fn finish<const R: usize>(acc: &[[[f32; 16]; 2]; R], out: &mut [[f32; 16]]) {
    for (o, a) in out.iter_mut().zip(acc) {
        for l in 0..16 {
            o[l] = a[0][l] + a[1][l];
        }
    }
}

/// Sixteen packed Q4_K rows times `R` activation rows, as [`super::avx512::q4k`] (the same
/// bits). A sub-block's i16 sums stay below 8 × 2 × 15 × 127 = 30,480.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C; `acts.len() == R <= out.len()`, each activation
/// row at least as many blocks as `w` holds whole packed Q4_K super-blocks.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q4k_packed<const R: usize>(w: &[u8], acts: &[ActRow], out: &mut [[f32; 16]]) {
    // SAFETY: the caller upholds this function's contract (# Safety above): the CPU features are there and every load stays inside `w` and `acts`.
    unsafe {
        debug_assert!(acts.len() == R && out.len() >= R);
        let m4 = _mm256_set1_epi8(0x0F);
        // Scales, minimums, d and dmin follow the values (see `packed`).
        let meta = 2048;
        let mut acc = [[[0f32; 16]; 2]; R];
        for i in 0..w.len() / Q4K_PACKED {
            let p = w.as_ptr().add(i * Q4K_PACKED);
            let x: [*const i8; R] = std::array::from_fn(|r| acts[r].q8.get_unchecked(i).qs.as_ptr());
            // Rows 8h..8h + 8: the first (h = 0) or second 32 bytes of every line.
            for h in 0..2 {
                let mut isum = [_mm256_setzero_si256(); R];
                // Sub-block s: the low (even s) or high nibbles of chunk s / 2.
                for s in 0..8 {
                    let (c, high) = (s / 2, s % 2);
                    let mut part = [_mm256_setzero_si256(); R];
                    for g in 0..8 {
                        // Each line once (the first pass over it), even for one row: without,
                        // one sequence decoded at 13.0 tok/s against 16.1-16.5 (this Zen 3, two
                        // interleaved rounds), while AVX-512 reads one row faster without.
                        if h == 0 && high == 0 {
                            prefetch(p, 64 * (8 * c + g));
                        }
                        let v = load(p.add(64 * (8 * c + g) + 32 * h) as *const i8);
                        let v = if high == 1 { _mm256_and_si256(_mm256_srli_epi16(v, 4), m4) } else { _mm256_and_si256(v, m4) };
                        for r in 0..R {
                            let a = bcast(x[r].add(64 * c + 32 * high + 4 * g));
                            part[r] = _mm256_add_epi16(part[r], _mm256_maddubs_epi16(v, a));
                        }
                    }
                    let scale = u8_pairs(p.add(meta + 16 * s + 8 * h));
                    for r in 0..R {
                        isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(part[r], scale));
                    }
                }
                if h == 0 {
                    for l in 0..5 {
                        prefetch(p, meta + 64 * l);
                    }
                }
                let mut msum = [_mm256_setzero_si256(); R];
                for q in 0..4 {
                    let mins = _mm256_cvtepu8_epi16(_mm_loadu_si128(p.add(meta + 128 + 32 * q + 16 * h) as *const _));
                    for r in 0..R {
                        let sums = _mm256_set1_epi32(*acts[r].pairs.get_unchecked(4 * i + q));
                        msum[r] = _mm256_add_epi32(msum[r], _mm256_madd_epi16(mins, sums));
                    }
                }
                let d = _mm256_cvtph_ps(_mm_loadu_si128(p.add(meta + 256 + 16 * h) as *const _));
                let dmin = _mm256_cvtph_ps(_mm_loadu_si128(p.add(meta + 288 + 16 * h) as *const _));
                for r in 0..R {
                    let ad = _mm256_set1_ps(acts[r].q8.get_unchecked(i).d);
                    let v = _mm256_mul_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_mul_ps(d, ad));
                    let v = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum[r]), _mm256_mul_ps(dmin, ad), v);
                    add_to(&mut acc[r][i & 1][8 * h..], v);
                }
            }
        }
        finish(&acc, out);
    }
}

/// Sixteen packed Q6_K rows times `R` activation rows, as [`super::avx512::q6k`] (the same
/// bits). The stored values are q + 32 (0 to 63), so two of `vpmaddubsw`'s i16 sums add up to
/// at most 2 × 2 × 63 × 127 = 32,004: a sub-block of sixteen values is two of those sums, each
/// scaled by `vpmaddwd`.
///
/// # Safety
/// As [`q4k_packed`], for packed Q6_K super-blocks.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q6k_packed<const R: usize>(w: &[u8], acts: &[ActRow], out: &mut [[f32; 16]]) {
    // SAFETY: the caller upholds this function's contract (# Safety above): the CPU features are there and every load stays inside `w` and `acts`.
    unsafe {
        debug_assert!(acts.len() == R && out.len() >= R);
        let meta = 3072;
        let mut acc = [[[0f32; 16]; 2]; R];
        for i in 0..w.len() / Q6K_PACKED {
            let p = w.as_ptr().add(i * Q6K_PACKED);
            let x: [*const i8; R] = std::array::from_fn(|r| acts[r].q8.get_unchecked(i).qs.as_ptr());
            // Every line of the block, once: Q6_K's loads jump between regions, which the CPU's
            // prefetcher does not follow, whatever the row count (see `prefetch`).
            for l in 0..Q6K_PACKED / 64 {
                prefetch(p, 64 * l);
            }
            for h in 0..2 {
                let mut isum = [_mm256_setzero_si256(); R];
                q6k_run::<R, 0>(p, h, &x, &mut isum);
                q6k_run::<R, 1>(p, h, &x, &mut isum);
                q6k_run::<R, 2>(p, h, &x, &mut isum);
                q6k_run::<R, 3>(p, h, &x, &mut isum);
                // The stored values are q + 32: take 32 · Σ scale · (sum of 16 activations) back
                // off, the scales of sub-blocks 2t and 2t + 1 paired for one `vpmaddwd`.
                let mut offset = [_mm256_setzero_si256(); R];
                for t in 0..8 {
                    let even = _mm_loadl_epi64(p.add(meta + 32 * t + 8 * h) as *const __m128i);
                    let odd = _mm_loadl_epi64(p.add(meta + 32 * t + 16 + 8 * h) as *const __m128i);
                    let scales = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(even, odd));
                    for r in 0..R {
                        let sums = bcast(acts[r].q8.get_unchecked(i).bsums.as_ptr().add(2 * t) as *const i8);
                        offset[r] = _mm256_add_epi32(offset[r], _mm256_madd_epi16(scales, sums));
                    }
                }
                let d = _mm256_cvtph_ps(_mm_loadu_si128(p.add(meta + 256 + 16 * h) as *const _));
                for r in 0..R {
                    let ad = _mm256_set1_ps(acts[r].q8.get_unchecked(i).d);
                    let total = _mm256_sub_epi32(isum[r], _mm256_slli_epi32(offset[r], 5));
                    add_to(&mut acc[r][i & 1][8 * h..], _mm256_mul_ps(_mm256_cvtepi32_ps(total), _mm256_mul_ps(d, ad)));
                }
            }
        }
        finish(&acc, out);
    }
}

/// Run `K` of both halves of a Q6_K super-block at `p` (rows 8h..8h + 8): its four sub-blocks'
/// scaled sums added to `isum`. The run is a constant, so that each picks its bits without a
/// branch: four low bits from ql, two high bits from qh moved to bits 4-5 (ggml's order, see
/// [`super::avx512`]).
#[inline(always)]
unsafe fn q6k_run<const R: usize, const K: usize>(p: *const u8, h: usize, x: &[*const i8; R], isum: &mut [__m256i; R]) {
    // SAFETY: the caller gives a whole packed Q6_K super-block at `p`, activation blocks at `x`, on a CPU with AVX2.
    unsafe {
        let (m4, m30) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(0x30));
        for n in 0..2 {
            // Values 0..16 of run K are sub-block 8n + 2K, values 16..32 the next.
            for half in 0..2 {
                let scale = i8_pairs(p.add(3072 + 16 * (8 * n + 2 * K + half) + 8 * h));
                for g2 in 0..2 {
                    let mut part = [_mm256_setzero_si256(); R];
                    for g in 4 * half + 2 * g2..4 * half + 2 * g2 + 2 {
                        let l = load(p.add(64 * (16 * n + 8 * (K % 2) + g) + 32 * h) as *const i8);
                        let hb = load(p.add(2048 + 64 * (8 * n + g) + 32 * h) as *const i8);
                        let low = if K < 2 { l } else { _mm256_srli_epi16(l, 4) };
                        let high = match K {
                            0 => _mm256_slli_epi16(hb, 4),
                            1 => _mm256_slli_epi16(hb, 2),
                            2 => hb,
                            _ => _mm256_srli_epi16(hb, 2),
                        };
                        let v = _mm256_or_si256(_mm256_and_si256(low, m4), _mm256_and_si256(high, m30));
                        for r in 0..R {
                            let a = bcast(x[r].add(128 * n + 32 * K + 4 * g));
                            part[r] = _mm256_add_epi16(part[r], _mm256_maddubs_epi16(v, a));
                        }
                    }
                    for r in 0..R {
                        isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(part[r], scale));
                    }
                }
            }
        }
    }
}
