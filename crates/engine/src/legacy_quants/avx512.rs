//! AVX-512 (VNNI) kernels over the packed layout ([`super::packed`]): sixteen weight rows, one
//! per 32-bit lane, against one or two activation rows. Each `vpdpbusd` multiplies four values
//! of every weight row with four activations broadcast to all lanes, so the sixteen outputs
//! need no horizontal sums.
//!
//! The float part is the reference's ([`super::reference`]): per row and block, the exact sum
//! of quad `q` (values `4q..4q + 4`) goes, times the block's scale, into that row's lane
//! accumulator `q`, and the eight accumulators are added in the reference's tree at the end.
//! The weights are stored plus an offset: the accumulator of each `vpdpbusd` starts at minus
//! the offset times the four activations' sum, so the sum it gives is the exact one.

use super::format_id::{format, Q4_0, Q5_0, Q8_0};
use super::packed::{offset, packed_bytes, scales_at};
use super::Q8Block;
use std::arch::x86_64::*;

/// Activation rows per call: two rows' sixteen lane accumulators fill half the registers.
pub const MAX_ROWS: usize = 2;

/// One activation row as these kernels read it: its blocks, and per block and quad the sum of
/// its four values, negated (what the offsets multiply).
pub struct ActRow<'a> {
    blocks: &'a [Q8Block],
    neg_quad_sums: Vec<i32>,
}

impl<'a> ActRow<'a> {
    pub fn new(blocks: &'a [Q8Block]) -> Self {
        let neg_quad_sums =
            blocks.iter().flat_map(|b| b.qs.chunks_exact(4).map(|q| -q.iter().map(|&v| v as i32).sum::<i32>())).collect();
        Self { blocks, neg_quad_sums }
    }
}

/// Quad `q`'s stored values for the sixteen rows of the packed block at `p` (Q4_0 and Q5_0
/// take quads `g` and `g + 4` from one load, so the caller asks for both at once).
#[inline(always)]
unsafe fn quads<const F: u8>(p: *const u8, g: usize) -> [__m512i; 2] {
    // SAFETY: the caller gives a whole packed block of format `F` at `p`, `g < 4`, on a CPU that passes `supported`.
    unsafe {
        if F == Q8_0 {
            return [_mm512_loadu_si512(p.add(64 * g) as *const _), _mm512_loadu_si512(p.add(64 * (g + 4)) as *const _)];
        }
        let raw = _mm512_loadu_si512(p.add(64 * g) as *const _);
        let low = _mm512_set1_epi8(0x0F);
        let v = [_mm512_and_si512(raw, low), _mm512_and_si512(_mm512_srli_epi16(raw, 4), low)];
        if F == Q4_0 {
            return v;
        }
        let fifth = |q: usize| std::ptr::read_unaligned(p.add(256 + 8 * q) as *const u64);
        let sixteen = _mm512_set1_epi8(16);
        [_mm512_mask_add_epi8(v[0], fifth(g), v[0], sixteen), _mm512_mask_add_epi8(v[1], fifth(g + 4), v[1], sixteen)]
    }
}

/// `x` times format `F`'s offset (a power of two).
#[inline(always)]
unsafe fn times_offset<const F: u8>(x: __m512i) -> __m512i {
    const { assert!(offset(format(Q8_0)) == 1 << 7 && offset(format(Q5_0)) == 1 << 4 && offset(format(Q4_0)) == 1 << 3) };
    // SAFETY: the caller runs on a CPU that passes `supported`.
    unsafe {
        match F {
            Q8_0 => _mm512_slli_epi32::<7>(x),
            Q5_0 => _mm512_slli_epi32::<4>(x),
            _ => _mm512_slli_epi32::<3>(x),
        }
    }
}

/// Sixteen packed rows (`w`: their blocks in order) times `R` activation rows: `out[r][l]` is
/// weight row `l` times activation row `r`.
///
/// # Safety
/// The CPU must pass [`crate::kquants::avx512::supported`]; `acts.len() == R <= out.len()`,
/// and each activation row has at least as many blocks as `w` holds.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
pub unsafe fn dot<const R: usize, const F: u8>(w: &[u8], acts: &[ActRow], out: &mut [[f32; 16]]) {
    // SAFETY: the caller upholds this function's contract (# Safety above): the CPU has the
    // features and every load stays inside `w` and `acts`.
    unsafe {
        debug_assert!(acts.len() == R && out.len() >= R);
        let bytes = packed_bytes(format(F));
        let mut acc = [[_mm512_setzero_ps(); 8]; R];
        for i in 0..w.len() / bytes {
            let p = w.as_ptr().add(i * bytes);
            let d = _mm512_cvtph_ps(_mm256_loadu_si256(p.add(scales_at(format(F))) as *const _));
            let scale: [__m512; R] = std::array::from_fn(|r| _mm512_mul_ps(d, _mm512_set1_ps(acts[r].blocks.get_unchecked(i).d)));
            for g in 0..4 {
                for (h, v) in quads::<F>(p, g).into_iter().enumerate() {
                    let q = g + 4 * h;
                    for r in 0..R {
                        let a = &acts[r];
                        let start = times_offset::<F>(_mm512_set1_epi32(*a.neg_quad_sums.get_unchecked(8 * i + q)));
                        let four = std::ptr::read_unaligned(a.blocks.get_unchecked(i).qs.as_ptr().add(4 * q) as *const i32);
                        let sum = _mm512_dpbusd_epi32(start, v, _mm512_set1_epi32(four));
                        // Multiply, then add: the reference's two roundings, no fused multiply-add.
                        acc[r][q] = _mm512_add_ps(acc[r][q], _mm512_mul_ps(scale[r], _mm512_cvtepi32_ps(sum)));
                    }
                }
            }
        }
        for r in 0..R {
            let a = &acc[r];
            let s: [__m512; 4] = std::array::from_fn(|j| _mm512_add_ps(a[j], a[j + 4]));
            _mm512_storeu_ps(out[r].as_mut_ptr(), _mm512_add_ps(_mm512_add_ps(s[0], s[2]), _mm512_add_ps(s[1], s[3])));
        }
    }
}
