//! Tile kernels (AVX-512 VNNI) for products with several activation rows: batched decoding
//! and prompt prefill. Eight or sixteen activation rows are interleaved so one `vpdpbusd`
//! multiplies four weight values, broadcast, with four values of each row; a weight's
//! sub-block scale is then the same for every lane. The weight blocks are still read in place:
//! each super-block is unpacked to bytes on the stack, once per tile.
//!
//! The float sequence per output is the reference's (each super-block's value added to one of
//! two partial sums, even and odd blocks), so a row gets the same bits from a tile of either
//! width as from the row kernels.

use super::{avx512::q4k_scales_mins, Q8K, Q4K_BYTES, Q6K_BYTES, QK_K};
use super::avx2::f16_ptr;
use std::arch::x86_64::*;

/// Up to `lanes` (8 or 16) quantized activation rows, interleaved four bytes at a time.
pub struct ActTile {
    /// Per super-block: 64 groups × `lanes` rows × 4 values.
    qs: Vec<i8>,
    /// Per super-block: each row's scale.
    d: Vec<f32>,
    /// Per super-block: 16 sums of 16 values × `lanes` rows.
    bsums: Vec<i32>,
    /// Per super-block: 4 × `lanes` pairs of 32-value sums (sub-blocks 2t and 2t + 1 as the low
    /// and high i16 of one lane), for Q4_K's minimums.
    pairs: Vec<i32>,
    lanes: usize,
    pub rows: usize,
}

impl ActTile {
    pub fn new(rows: &[&[Q8K]], lanes: usize) -> Self {
        assert!(!rows.is_empty() && rows.len() <= lanes && (lanes == 8 || lanes == 16));
        let blocks = rows[0].len();
        let mut t = Self {
            qs: vec![0; blocks * QK_K * lanes],
            d: vec![0.0; blocks * lanes],
            bsums: vec![0; blocks * 16 * lanes],
            pairs: vec![0; blocks * 4 * lanes],
            lanes,
            rows: rows.len(),
        };
        for (r, row) in rows.iter().enumerate() {
            for (i, b) in row.iter().enumerate() {
                t.d[i * lanes + r] = b.d;
                for g in 0..QK_K / 4 {
                    let at = i * QK_K * lanes + g * 4 * lanes + r * 4;
                    t.qs[at..at + 4].copy_from_slice(&b.qs[4 * g..4 * g + 4]);
                }
                for (j, &s) in b.bsums.iter().enumerate() {
                    t.bsums[i * 16 * lanes + j * lanes + r] = s as i32;
                }
                let sum32 = |s: usize| (b.bsums[2 * s] + b.bsums[2 * s + 1]) as u16 as i32;
                for p in 0..4 {
                    t.pairs[i * 4 * lanes + p * lanes + r] = sum32(2 * p) | (sum32(2 * p + 1) << 16);
                }
            }
        }
        t
    }

    pub fn lanes(&self) -> usize {
        self.lanes
    }
}

/// A Q4_K super-block's 256 values (0..15) as bytes, in order.
#[inline(always)]
unsafe fn unpack_q4k(b: *const u8, vals: &mut [u8; QK_K]) {
    let m4 = _mm256_set1_epi8(0x0F);
    for j in 0..4 {
        let v = _mm256_loadu_si256(b.add(16 + 32 * j) as *const __m256i);
        _mm256_storeu_si256(vals.as_mut_ptr().add(64 * j) as *mut __m256i, _mm256_and_si256(v, m4));
        let hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        _mm256_storeu_si256(vals.as_mut_ptr().add(64 * j + 32) as *mut __m256i, hi);
    }
}

/// A Q6_K super-block's 256 values (0..63, the stored q + 32) as bytes, in order.
#[inline(always)]
unsafe fn unpack_q6k(b: *const u8, vals: &mut [u8; QK_K]) {
    let m4 = _mm256_set1_epi8(0x0F);
    let m3 = _mm256_set1_epi8(3);
    let high = |shifted: __m256i| _mm256_slli_epi16(_mm256_and_si256(shifted, m3), 4);
    for n in 0..2 {
        let l0 = _mm256_loadu_si256(b.add(64 * n) as *const __m256i);
        let l1 = _mm256_loadu_si256(b.add(64 * n + 32) as *const __m256i);
        let h = _mm256_loadu_si256(b.add(128 + 32 * n) as *const __m256i);
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
}

/// The kernels for one tile width, from that width's intrinsics.
macro_rules! tile_kernels {
    ($name:ident, $lanes:expr, $vi:ty, $zero_i:ident, $zero_f:ident, $set1_i:ident, $set1_f:ident,
     $dpbusd:ident, $load_i:ident, $load_f:ident, $store_f:ident, $add_i:ident, $sub_i:ident,
     $mullo:ident, $slli:ident, $cvt:ident, $mul_f:ident, $fmadd:ident, $add_f:ident, $dpwssd:ident) => {
        pub mod $name {
            use super::*;
            pub const LANES: usize = $lanes;

            /// Σ over 4·`groups` values of each row's weights (bytes at `vals[r]`) × the
            /// activations at `qa`. The weight rows share each activation load.
            #[inline(always)]
            unsafe fn dot_groups<const WR: usize>(vals: [*const u8; WR], qa: *const i8, groups: usize) -> [$vi; WR] {
                // Two accumulation chains per row, so consecutive `vpdpbusd`s do not wait.
                let (mut x0, mut x1) = ([$zero_i(); WR], [$zero_i(); WR]);
                for g in (0..groups).step_by(2) {
                    let a0 = $load_i(qa.add(g * 4 * LANES) as *const _);
                    let a1 = $load_i(qa.add((g + 1) * 4 * LANES) as *const _);
                    for r in 0..WR {
                        let w0 = $set1_i(std::ptr::read_unaligned(vals[r].add(4 * g) as *const i32));
                        let w1 = $set1_i(std::ptr::read_unaligned(vals[r].add(4 * g + 4) as *const i32));
                        x0[r] = $dpbusd(x0[r], w0, a0);
                        x1[r] = $dpbusd(x1[r], w1, a1);
                    }
                }
                std::array::from_fn(|r| $add_i(x0[r], x1[r]))
            }

            /// `WR` weight rows against one tile: `out[r]` gets row `r`'s `LANES` results.
            ///
            /// # Safety
            /// The CPU must pass [`super::super::avx512::supported`]; each row holds whole Q4_K
            /// blocks, as many as the tile's rows have; the tile is `LANES` wide.
            #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
            pub unsafe fn q4k<const WR: usize>(w: [&[u8]; WR], t: &ActTile, out: &mut [[f32; 16]; WR]) {
                debug_assert!(t.lanes == LANES);
                let mut vals = [[0u8; QK_K]; WR];
                let mut acc = [[$zero_f(); 2]; WR];
                for i in 0..w[0].len() / Q4K_BYTES {
                    let qa = t.qs.as_ptr().add(i * QK_K * LANES);
                    let ad = $load_f(t.d.as_ptr().add(i * LANES));
                    let mut sm = [[0u8; 16]; WR];
                    let mut dd = [(0f32, 0f32); WR];
                    for r in 0..WR {
                        let b = w[r].as_ptr().add(i * Q4K_BYTES);
                        dd[r] = (f16_ptr(b), f16_ptr(b.add(2)));
                        sm[r] = std::mem::transmute(q4k_scales_mins(&*(b.add(4) as *const [u8; 12])));
                        unpack_q4k(b, &mut vals[r]);
                    }
                    let (mut isum, mut msum) = ([$zero_i(); WR], [$zero_i(); WR]);
                    for s in 0..8 {
                        let x = dot_groups::<WR>(std::array::from_fn(|r| vals[r].as_ptr().add(32 * s)), qa.add(32 * s * LANES), 8);
                        for r in 0..WR {
                            isum[r] = $add_i(isum[r], $mullo(x[r], $set1_i(sm[r][s] as i32)));
                        }
                    }
                    // Minimums: two sub-blocks per `vpdpwssd` (32-value sums fit in 16 bits).
                    let pairs = t.pairs.as_ptr().add(i * 4 * LANES);
                    for p in 0..4 {
                        let sums = $load_i(pairs.add(p * LANES) as *const _);
                        for r in 0..WR {
                            let mins = sm[r][8 + 2 * p] as i32 | ((sm[r][9 + 2 * p] as i32) << 16);
                            msum[r] = $dpwssd(msum[r], sums, $set1_i(mins));
                        }
                    }
                    for r in 0..WR {
                        let (d, dmin) = dd[r];
                        let v = $mul_f($cvt(isum[r]), $mul_f($set1_f(d), ad));
                        let v = $fmadd($cvt(msum[r]), $mul_f($set1_f(-dmin), ad), v);
                        acc[r][i & 1] = $add_f(acc[r][i & 1], v);
                    }
                }
                for r in 0..WR {
                    $store_f(out[r].as_mut_ptr(), $add_f(acc[r][0], acc[r][1]));
                }
            }

            /// # Safety
            /// As [`q4k`], for Q6_K blocks.
            #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
            pub unsafe fn q6k<const WR: usize>(w: [&[u8]; WR], t: &ActTile, out: &mut [[f32; 16]; WR]) {
                debug_assert!(t.lanes == LANES);
                let mut vals = [[0u8; QK_K]; WR];
                let mut acc = [[$zero_f(); 2]; WR];
                for i in 0..w[0].len() / Q6K_BYTES {
                    let qa = t.qs.as_ptr().add(i * QK_K * LANES);
                    let bs = t.bsums.as_ptr().add(i * 16 * LANES);
                    let ad = $load_f(t.d.as_ptr().add(i * LANES));
                    let mut scales = [[0i8; 16]; WR];
                    let mut d = [0f32; WR];
                    for r in 0..WR {
                        let b = w[r].as_ptr().add(i * Q6K_BYTES);
                        scales[r] = *(b.add(192) as *const [i8; 16]);
                        d[r] = f16_ptr(b.add(208));
                        unpack_q6k(b, &mut vals[r]);
                    }
                    let mut isum = [$zero_i(); WR];
                    for g in 0..16 {
                        let x = dot_groups::<WR>(std::array::from_fn(|r| vals[r].as_ptr().add(16 * g)), qa.add(16 * g * LANES), 4);
                        // The stored values are q + 32: take 32 × these 16 activations' sum back off.
                        let offset = $slli($load_i(bs.add(g * LANES) as *const _), 5);
                        for r in 0..WR {
                            isum[r] = $add_i(isum[r], $mullo($sub_i(x[r], offset), $set1_i(scales[r][g] as i32)));
                        }
                    }
                    for r in 0..WR {
                        let v = $mul_f($cvt(isum[r]), $mul_f($set1_f(d[r]), ad));
                        acc[r][i & 1] = $add_f(acc[r][i & 1], v);
                    }
                }
                for r in 0..WR {
                    $store_f(out[r].as_mut_ptr(), $add_f(acc[r][0], acc[r][1]));
                }
            }
        }
    };
}

tile_kernels!(x16, 16, __m512i, _mm512_setzero_si512, _mm512_setzero_ps, _mm512_set1_epi32, _mm512_set1_ps,
    _mm512_dpbusd_epi32, _mm512_loadu_si512, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_add_epi32, _mm512_sub_epi32,
    _mm512_mullo_epi32, _mm512_slli_epi32, _mm512_cvtepi32_ps, _mm512_mul_ps, _mm512_fmadd_ps, _mm512_add_ps,
    _mm512_dpwssd_epi32);
tile_kernels!(x8, 8, __m256i, _mm256_setzero_si256, _mm256_setzero_ps, _mm256_set1_epi32, _mm256_set1_ps,
    _mm256_dpbusd_epi32, _mm256_loadu_si256, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_add_epi32, _mm256_sub_epi32,
    _mm256_mullo_epi32, _mm256_slli_epi32, _mm256_cvtepi32_ps, _mm256_mul_ps, _mm256_fmadd_ps, _mm256_add_ps,
    _mm256_dpwssd_epi32);
