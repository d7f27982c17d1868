//! Tile kernels (AVX-512 VNNI) for products with many activation rows: prompt prefill and
//! large batches. Sixteen activation rows are interleaved so one `vpdpbusd` multiplies four
//! weight values, broadcast, with four values of each of the sixteen rows; a weight's
//! sub-block scale is then the same for every lane. The weight blocks are still read in place:
//! each super-block is unpacked to bytes on the stack, once per sixteen rows.
//!
//! The float sequence per output is the reference's (one fused multiply-add per super-block,
//! in order), so a row gets the same bits from a tile as from the row kernels.

use super::{avx512::q4k_scales_mins, Q8K, Q4K_BYTES, Q6K_BYTES, QK_K};
use std::arch::x86_64::*;

pub const ROWS: usize = 16;

/// Up to sixteen quantized activation rows, interleaved four bytes at a time.
pub struct ActTile {
    /// Per super-block: 64 groups × 16 rows × 4 values.
    qs: Vec<i8>,
    /// Per super-block: each row's scale.
    d: Vec<f32>,
    /// Per super-block: 16 sums of 16 values × 16 rows.
    bsums: Vec<i32>,
    pub rows: usize,
}

impl ActTile {
    pub fn new(rows: &[&[Q8K]]) -> Self {
        assert!(!rows.is_empty() && rows.len() <= ROWS);
        let blocks = rows[0].len();
        let mut t = Self {
            qs: vec![0; blocks * QK_K * ROWS],
            d: vec![0.0; blocks * ROWS],
            bsums: vec![0; blocks * 16 * ROWS],
            rows: rows.len(),
        };
        for (r, row) in rows.iter().enumerate() {
            for (i, b) in row.iter().enumerate() {
                t.d[i * ROWS + r] = b.d;
                for g in 0..QK_K / 4 {
                    let at = i * QK_K * ROWS + g * 4 * ROWS + r * 4;
                    t.qs[at..at + 4].copy_from_slice(&b.qs[4 * g..4 * g + 4]);
                }
                for (j, &s) in b.bsums.iter().enumerate() {
                    t.bsums[i * 16 * ROWS + j * ROWS + r] = s as i32;
                }
            }
        }
        t
    }
}

#[inline(always)]
unsafe fn f16_ptr(p: *const u8) -> f32 {
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(std::ptr::read_unaligned(p as *const u16) as i32)))
}

/// Σ over 4·`groups` values of weights (bytes at `vals`) × the tile's activations at `qa`.
#[inline(always)]
unsafe fn dot_groups(vals: *const u8, qa: *const i8, groups: usize) -> __m512i {
    let mut x = _mm512_setzero_si512();
    for g in 0..groups {
        let w = _mm512_set1_epi32(std::ptr::read_unaligned(vals.add(4 * g) as *const i32));
        x = _mm512_dpbusd_epi32(x, w, _mm512_loadu_si512(qa.add(g * 4 * ROWS) as *const _));
    }
    x
}

/// # Safety
/// The CPU must pass [`super::avx512::supported`]; `w` holds whole Q4_K blocks, as many as
/// the tile's rows have.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
pub unsafe fn q4k(w: &[u8], t: &ActTile, out: &mut [f32; ROWS]) {
    let m4 = _mm256_set1_epi8(0x0F);
    let mut vals = [0u8; QK_K];
    let mut acc = _mm512_setzero_ps();
    for i in 0..w.len() / Q4K_BYTES {
        let b = w.as_ptr().add(i * Q4K_BYTES);
        let (d, dmin) = (f16_ptr(b), f16_ptr(b.add(2)));
        let u = q4k_scales_mins(&*(b.add(4) as *const [u8; 12]));
        let sm: [u8; 16] = std::mem::transmute(u);
        for j in 0..4 {
            let v = _mm256_loadu_si256(b.add(16 + 32 * j) as *const __m256i);
            _mm256_storeu_si256(vals.as_mut_ptr().add(64 * j) as *mut __m256i, _mm256_and_si256(v, m4));
            let hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            _mm256_storeu_si256(vals.as_mut_ptr().add(64 * j + 32) as *mut __m256i, hi);
        }
        let qa = t.qs.as_ptr().add(i * QK_K * ROWS);
        let bs = t.bsums.as_ptr().add(i * 16 * ROWS);
        let (mut isum, mut msum) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        for s in 0..8 {
            let x = dot_groups(vals.as_ptr().add(32 * s), qa.add(32 * s * ROWS), 8);
            isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(x, _mm512_set1_epi32(sm[s] as i32)));
            let pair = _mm512_add_epi32(
                _mm512_loadu_si512(bs.add(2 * s * ROWS) as *const _),
                _mm512_loadu_si512(bs.add((2 * s + 1) * ROWS) as *const _),
            );
            msum = _mm512_add_epi32(msum, _mm512_mullo_epi32(pair, _mm512_set1_epi32(sm[8 + s] as i32)));
        }
        let ad = _mm512_loadu_ps(t.d.as_ptr().add(i * ROWS));
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(_mm512_set1_ps(d), ad), acc);
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(_mm512_set1_ps(-dmin), ad), acc);
    }
    _mm512_storeu_ps(out.as_mut_ptr(), acc);
}

/// # Safety
/// As [`q4k`], for Q6_K blocks.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
pub unsafe fn q6k(w: &[u8], t: &ActTile, out: &mut [f32; ROWS]) {
    let m4 = _mm256_set1_epi8(0x0F);
    let m3 = _mm256_set1_epi8(3);
    let mut vals = [0u8; QK_K];
    let mut acc = _mm512_setzero_ps();
    for i in 0..w.len() / Q6K_BYTES {
        let b = w.as_ptr().add(i * Q6K_BYTES);
        let scales = &*(b.add(192) as *const [i8; 16]);
        let d = f16_ptr(b.add(208));
        for n in 0..2 {
            let l0 = _mm256_loadu_si256(b.add(64 * n) as *const __m256i);
            let l1 = _mm256_loadu_si256(b.add(64 * n + 32) as *const __m256i);
            let h = _mm256_loadu_si256(b.add(128 + 32 * n) as *const __m256i);
            let high = |shifted: __m256i| _mm256_slli_epi16(_mm256_and_si256(shifted, m3), 4);
            let q = [
                _mm256_or_si256(_mm256_and_si256(l0, m4), high(h)),
                _mm256_or_si256(_mm256_and_si256(l1, m4), high(_mm256_srli_epi16(h, 2))),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), high(_mm256_srli_epi16(h, 4))),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), high(_mm256_srli_epi16(h, 6))),
            ];
            for (k, qk) in q.iter().enumerate() {
                _mm256_storeu_si256(vals.as_mut_ptr().add(128 * n + 32 * k) as *mut __m256i, *qk);
            }
        }
        let qa = t.qs.as_ptr().add(i * QK_K * ROWS);
        let bs = t.bsums.as_ptr().add(i * 16 * ROWS);
        let mut isum = _mm512_setzero_si512();
        for g in 0..16 {
            let x = dot_groups(vals.as_ptr().add(16 * g), qa.add(16 * g * ROWS), 4);
            // The stored values are q + 32: take 32 × the sum of these 16 activations back off.
            let x = _mm512_sub_epi32(x, _mm512_slli_epi32(_mm512_loadu_si512(bs.add(g * ROWS) as *const _), 5));
            isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(x, _mm512_set1_epi32(scales[g] as i32)));
        }
        let ad = _mm512_loadu_ps(t.d.as_ptr().add(i * ROWS));
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(_mm512_set1_ps(d), ad), acc);
    }
    _mm512_storeu_ps(out.as_mut_ptr(), acc);
}
