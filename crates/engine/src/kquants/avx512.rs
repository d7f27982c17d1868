//! AVX-512 (VNNI) kernels over the packed layout ([`super::packed`]): sixteen weight rows, one
//! per 32-bit lane, against up to four activation rows. Each `vpdpbusd` multiplies four bytes of
//! every weight row with four activations broadcast to all lanes, so the sixteen outputs need
//! no horizontal sums, and a sub-block's scale is a per-lane multiply of an exact integer sum.
//!
//! The float part is the reference's: per super-block and output, one exact integer sum (and
//! one for Q4_K's minimums), turned into a float the same way, and added to one of two partial
//! sums (even and odd blocks). So every output has the reference's bits, whatever the batch.

use super::packed::{prefetch, ActRow, Q4K_PACKED, Q6K_PACKED};
use super::Q8K;
use crate::huge_pages::AlignedBytes;
use std::arch::x86_64::*;

pub fn supported() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512dq")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512vnni")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
}

/// Where the Q6_K kernel reads a super-block's weight values: packed blocks, unpacked as it goes
/// (few activation rows), or a group already unpacked to one byte per value by [`unpack_q6k`]
/// (many rows: the unpacking is then done once, not once per four activation rows).
pub trait Source {
    const UNPACKED: bool;
}
pub struct Packed;
pub struct Unpacked;
impl Source for Packed {
    const UNPACKED: bool = false;
}
impl Source for Unpacked {
    const UNPACKED: bool = true;
}

/// Bytes of one Q6_K super-block of sixteen rows, and where its scales (and `d`) start.
const fn q6k_layout<S: Source>() -> (usize, usize) {
    if S::UNPACKED {
        (4096 + Q6K_PACKED - 3072, 4096)
    } else {
        (Q6K_PACKED, 3072)
    }
}

/// Q6_K half `n`, load group `g`: the values (q + 32) of runs 0..4, four bytes per row.
#[inline(always)]
pub(super) unsafe fn q6k_values<S: Source>(p: *const u8, n: usize, g: usize) -> [__m512i; 4] {
    // SAFETY: the caller gives a whole packed Q6_K super-block (or its unpacked bytes) at `p` on a CPU that passes `supported`.
    unsafe {
        if S::UNPACKED {
            let at = p.add(256 * (8 * n + g));
            return std::array::from_fn(|k| _mm512_loadu_si512(at.add(64 * k) as *const _));
        }
        // ggml's order: runs k take their low bits from ql (dwords 16n + g, then 16n + 8 + g; low
        // then high nibbles) and two high bits from qh (dword 8n + g, bits 2k).
        prefetch(p, 64 * (16 * n + g));
        prefetch(p, 64 * (16 * n + 8 + g));
        prefetch(p, 2048 + 64 * (8 * n + g));
        let l0 = _mm512_loadu_si512(p.add(64 * (16 * n + g)) as *const _);
        let l1 = _mm512_loadu_si512(p.add(64 * (16 * n + 8 + g)) as *const _);
        let hb = _mm512_loadu_si512(p.add(2048 + 64 * (8 * n + g)) as *const _);
        // Runs 0 and 2 take bits 0-1 and 4-5 of qh, runs 1 and 3 bits 2-3 and 6-7: with the other
        // pairs cleared, each run's two bits shift to bits 4-5 with zeros above, and one
        // `vpternlogd` takes bits 0-3 from ql and 4-7 from qh.
        let h02 = _mm512_and_si512(hb, _mm512_set1_epi8(0x33));
        let h13 = _mm512_and_si512(hb, _mm512_set1_epi8(0xCCu8 as i8));
        let join = |low: __m512i, high: __m512i| _mm512_ternarylogic_epi32::<0xCA>(_mm512_set1_epi8(0x0F), low, high);
        [
            join(l0, _mm512_slli_epi16(h02, 4)),
            join(l1, _mm512_slli_epi16(h13, 2)),
            join(_mm512_srli_epi16(l0, 4), h02),
            join(_mm512_srli_epi16(l1, 4), _mm512_srli_epi16(h13, 2)),
        ]
    }
}

/// A packed group of Q6_K super-blocks with its values unpacked to bytes (what [`Unpacked`]
/// reads), into `out`.
///
/// # Safety
/// The CPU must pass [`supported`]; `w` holds whole packed Q6_K super-blocks.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
pub unsafe fn unpack_q6k(w: &[u8], out: &mut AlignedBytes) {
    // SAFETY: the caller upholds this function's contract (# Safety above); every load stays inside `w`, every store inside `out`, sized here.
    unsafe {
        let ((from, meta), (to, _)) = (q6k_layout::<Packed>(), q6k_layout::<Unpacked>());
        let blocks = w.len() / from;
        out.resize(blocks * to);
        for i in 0..blocks {
            let (p, q) = (w.as_ptr().add(i * from), out.as_mut_ptr().add(i * to));
            for l in 0..5 {
                prefetch(p, meta + 64 * l);
            }
            for j in 0..16 {
                for (k, v) in q6k_values::<Packed>(p, j / 8, j % 8).into_iter().enumerate() {
                    _mm512_storeu_si512(q.add(256 * j + 64 * k) as *mut _, v);
                }
            }
            std::ptr::copy_nonoverlapping(p.add(meta), q.add(4096), from - meta);
        }
    }
}

/// [`Q8K::quantize_block`] with 16-lane registers: the same bytes.
///
/// # Safety
/// The CPU must pass [`supported`].
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")]
pub unsafe fn quantize(xs: &[f32; 256]) -> Q8K {
    // SAFETY: the caller upholds this function's contract (# Safety above); the loads and stores stay inside `xs` and the returned block.
    unsafe {
        // Plain loops, no closures: iterator adapters and closures here were not inlined, and
        // called across them the registers went through memory (1.5 % of a prompt's time).
        let mut x = [_mm512_setzero_ps(); 16];
        let mut m = _mm512_setzero_ps();
        for (j, v) in x.iter_mut().enumerate() {
            *v = _mm512_loadu_ps(xs.as_ptr().add(16 * j));
            // `max` with the running value second skips NaN, as the scalar comparison does.
            m = _mm512_max_ps(_mm512_abs_ps(*v), m);
        }
        let amax = _mm512_reduce_max_ps(m);
        if amax == 0.0 {
            return Q8K::ZERO;
        }
        // The first value of that magnitude: its sign sets the scale's.
        let mut at = 0;
        for (j, &v) in x.iter().enumerate() {
            let mask = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(_mm512_abs_ps(v), _mm512_set1_ps(amax));
            if mask != 0 {
                at = 16 * j + mask.trailing_zeros() as usize;
                break;
            }
        }
        let max = xs[at];
        let iscale = -127f32 / max;
        let mut y = Q8K::ZERO;
        for (j, &v) in x.iter().enumerate() {
            let v = _mm512_mul_ps(_mm512_set1_ps(iscale), v);
            // Round half away from zero (`f32::round`): truncate, then step away from zero when
            // the dropped part is at least a half (exact: the values are far below 2^23).
            let t = _mm512_roundscale_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(v);
            let up = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(_mm512_abs_ps(_mm512_sub_ps(v, t)), _mm512_set1_ps(0.5));
            let sign = _mm512_or_ps(_mm512_set1_ps(1.0), _mm512_and_ps(v, _mm512_set1_ps(-0.0)));
            let r = _mm512_mask_add_ps(t, up, t, sign);
            let r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-128.0)), _mm512_set1_ps(127.0));
            // NaN becomes 0, as `as i8` makes it.
            let q = _mm512_maskz_cvtps_epi32(_mm512_cmp_ps_mask::<_CMP_ORD_Q>(v, v), r);
            _mm_storeu_si128(y.qs.as_mut_ptr().add(16 * j) as *mut _, _mm512_cvtsepi32_epi8(q));
            y.bsums[j] = _mm512_reduce_add_epi32(q) as i16;
        }
        y.d = 1.0 / iscale;
        y
    }
}

/// Four activations from `x`, in every lane.
#[inline(always)]
unsafe fn bcast(x: *const i8) -> __m512i {
    // SAFETY: the caller gives four readable bytes at `x` on a CPU that passes `supported`.
    unsafe { _mm512_set1_epi32(std::ptr::read_unaligned(x as *const i32)) }
}

/// Sixteen packed Q4_K rows (`w`: their super-blocks in order) times `R` activation rows:
/// `out[r][l]` is weight row `l` times activation row `r`.
///
/// # Safety
/// The CPU must pass [`supported`]; `acts.len() == R <= out.len()`, each activation row at
/// least as many blocks as `w` holds, and the rows were prepared for Q4_K.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
pub unsafe fn q4k<const R: usize>(w: &[u8], acts: &[ActRow], out: &mut [[f32; 16]]) {
    // SAFETY: the caller upholds this function's contract (# Safety above): the CPU passes `supported` and every load stays inside `w` and `acts`.
    unsafe {
        debug_assert!(acts.len() == R && out.len() >= R);
        let (lo_mask, hi_mask) = (_mm512_set1_epi8(0x0F), _mm512_set1_epi8(0xF0u8 as i8));
        // Scales, minimums, d and dmin follow the values (see `packed`).
        let meta = 2048;
        let mut acc = [[_mm512_setzero_ps(); R]; 2];
        for i in 0..w.len() / Q4K_PACKED {
            let p = w.as_ptr().add(i * Q4K_PACKED);
            let x: [*const i8; R] = std::array::from_fn(|r| acts[r].q8.get_unchecked(i).qs.as_ptr());
            // 16 × the exact sum: the high nibbles are multiplied where they are (as 16 × the
            // value), which saves a shift per load; the low nibbles' scales are 16 × to match.
            let mut isum16 = [_mm512_setzero_si512(); R];
            for c in 0..4 {
                // Chunk c: low nibbles are sub-block 2c, high nibbles 2c + 1.
                let (mut lo, mut hi) = ([_mm512_setzero_si512(); R], [_mm512_setzero_si512(); R]);
                for g in 0..8 {
                    if R > 1 {
                        prefetch(p, 64 * (8 * c + g));
                    }
                    let v = _mm512_loadu_si512(p.add(64 * (8 * c + g)) as *const _);
                    let (vl, vh) = (_mm512_and_si512(v, lo_mask), _mm512_and_si512(v, hi_mask));
                    for r in 0..R {
                        lo[r] = _mm512_dpbusd_epi32(lo[r], vl, bcast(x[r].add(64 * c + 4 * g)));
                        hi[r] = _mm512_dpbusd_epi32(hi[r], vh, bcast(x[r].add(64 * c + 32 + 4 * g)));
                    }
                }
                let scale = |s: usize| _mm512_cvtepu8_epi32(_mm_loadu_si128(p.add(meta + 16 * s) as *const _));
                let (s_lo, s_hi) = (_mm512_slli_epi32(scale(2 * c), 4), scale(2 * c + 1));
                for r in 0..R {
                    let both = _mm512_add_epi32(_mm512_mullo_epi32(lo[r], s_lo), _mm512_mullo_epi32(hi[r], s_hi));
                    isum16[r] = _mm512_add_epi32(isum16[r], both);
                }
            }
            if R > 1 {
                for l in 0..5 {
                    prefetch(p, meta + 64 * l);
                }
            }
            let mut msum = [_mm512_setzero_si512(); R];
            for q in 0..4 {
                let mins = _mm512_cvtepu8_epi16(_mm256_loadu_si256(p.add(meta + 128 + 32 * q) as *const _));
                for r in 0..R {
                    let sums = _mm512_set1_epi32(*acts[r].pairs.get_unchecked(4 * i + q));
                    msum[r] = _mm512_dpwssd_epi32(msum[r], mins, sums);
                }
            }
            let d = _mm512_cvtph_ps(_mm256_loadu_si256(p.add(meta + 256) as *const _));
            let dmin = _mm512_cvtph_ps(_mm256_loadu_si256(p.add(meta + 288) as *const _));
            for r in 0..R {
                let ad = _mm512_set1_ps(acts[r].q8.get_unchecked(i).d);
                let isum = _mm512_cvtepi32_ps(_mm512_srai_epi32(isum16[r], 4));
                let v = _mm512_mul_ps(isum, _mm512_mul_ps(d, ad));
                let v = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum[r]), _mm512_mul_ps(dmin, ad), v);
                acc[i & 1][r] = _mm512_add_ps(acc[i & 1][r], v);
            }
        }
        for r in 0..R {
            _mm512_storeu_ps(out[r].as_mut_ptr(), _mm512_add_ps(acc[0][r], acc[1][r]));
        }
    }
}

/// As [`q4k`], for packed Q6_K rows.
///
/// # Safety
/// As [`q4k`], with the rows prepared for Q6_K.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
pub unsafe fn q6k<const R: usize, S: Source>(w: &[u8], acts: &[ActRow], out: &mut [[f32; 16]]) {
    // SAFETY: the caller upholds this function's contract (# Safety above): the CPU passes `supported` and every load stays inside `w` and `acts`.
    unsafe {
        debug_assert!(acts.len() == R && out.len() >= R);
        let (block, meta) = q6k_layout::<S>();
        let mut acc = [[_mm512_setzero_ps(); R]; 2];
        for i in 0..w.len() / block {
            let p = w.as_ptr().add(i * block);
            let x: [*const i8; R] = std::array::from_fn(|r| acts[r].q8.get_unchecked(i).qs.as_ptr());
            let mut isum = [_mm512_setzero_si512(); R];
            // Halves n of 128 values, each four runs k of 32; run k's values 0..16 and 16..32 (h)
            // are sub-blocks 8n + 2k + h, each with its own scale.
            for n in 0..2 {
                for h in 0..2 {
                    let mut dot = [[_mm512_setzero_si512(); R]; 4];
                    for g in 4 * h..4 * h + 4 {
                        let v = q6k_values::<S>(p, n, g);
                        for r in 0..R {
                            for k in 0..4 {
                                dot[k][r] = _mm512_dpbusd_epi32(dot[k][r], v[k], bcast(x[r].add(128 * n + 32 * k + 4 * g)));
                            }
                        }
                    }
                    for (k, dot) in dot.iter().enumerate() {
                        let s = 8 * n + 2 * k + h;
                        let scale = _mm512_cvtepi8_epi32(_mm_loadu_si128(p.add(meta + 16 * s) as *const _));
                        for r in 0..R {
                            let offset = _mm512_set1_epi32(*acts[r].offsets.get_unchecked(16 * i + s));
                            isum[r] = _mm512_add_epi32(isum[r], _mm512_mullo_epi32(_mm512_sub_epi32(dot[r], offset), scale));
                        }
                    }
                }
            }
            if !S::UNPACKED {
                for l in 0..5 {
                    prefetch(p, meta + 64 * l);
                }
            }
            let d = _mm512_cvtph_ps(_mm256_loadu_si256(p.add(meta + 256) as *const _));
            for r in 0..R {
                let ad = _mm512_set1_ps(acts[r].q8.get_unchecked(i).d);
                let v = _mm512_mul_ps(_mm512_cvtepi32_ps(isum[r]), _mm512_mul_ps(d, ad));
                acc[i & 1][r] = _mm512_add_ps(acc[i & 1][r], v);
            }
        }
        for r in 0..R {
            _mm512_storeu_ps(out[r].as_mut_ptr(), _mm512_add_ps(acc[0][r], acc[1][r]));
        }
    }
}
