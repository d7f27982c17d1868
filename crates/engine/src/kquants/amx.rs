//! Q4_K and Q6_K products of many activation rows on AMX, the tile unit of Intel's Xeons since Sapphire
//! Rapids: one `tdpbsud` multiplies sixteen activation rows by sixteen weight rows over 64
//! values, about fifteen times the multiply-adds per cycle of AVX-512's `vpdpbusd`.
//!
//! With AVX-512, Q4_K's products stop at the per-sub-block multiply of each exact sum by its
//! 6-bit scale, which every activation row pays again. Here the scale goes into the weights
//! instead, once per group of sixteen weight rows for all the activation rows: a scale `s`
//! splits into `s = 16 h + l` (`l < 16`, `h < 4`), and a 4-bit value `q` times either part still
//! fits the unsigned byte a tile multiplies (`15 × 15 = 225`). Two tiles of weights, `q × l` and
//! `q × h`, give per super-block `Σ l q a` and `Σ h q a`, and `isum = Σ l q a + 16 Σ h q a` is
//! the exact integer the AVX-512 kernel computes ([`super::avx512::q4k`]). From there the float
//! part is that kernel's, operation for operation, so each output has the reference's bits, and
//! a row's bits do not depend on whether its batch was large enough for this kernel. Q6_K's
//! signed 8-bit scales take four such digits instead of two ([`q6k`]).
//!
//! The packed layout ([`super::packed`]) is already a tile's: a 64-byte line holds four values
//! of each of sixteen weight rows, in the order `tdpbsud` reads its second operand.

use super::packed::{prefetch, ActRow, Q4K_PACKED, Q6K_PACKED};
use super::{Format, Q8K, QK_K};
use crate::huge_pages::AlignedBytes;
use std::arch::asm;
use std::arch::x86_64::*;

/// From how many activation rows on each format's products run on the tiles. Below, the work
/// the vector units do per super-block whatever the row count (scaling the weights into tiles)
/// outweighs what the tiles save, and the AVX-512 kernels are faster. Measured with criterion
/// (`kquants`, `ffn_up` and `ffn_down` of the 1.5B test model, 2 threads): Q4_K 450 µs against
/// 343–361 at 8 rows, 574–616 against 678–700 at 16, 1.59–1.72 ms against 2.70–2.71 at 64;
/// Q6_K 1.14 ms against 0.56–0.58 at 8 rows, 1.22–1.27 against 1.07–1.11 at 16, 2.58–2.64
/// against 4.01–4.06 at 64.
pub fn from_rows(format: Format) -> usize {
    match format {
        Format::Q4K => 16,
        Format::Q6K => 32,
    }
}

/// Activation rows per tile.
const TILE_ROWS: usize = 16;

/// Whether the CPU has AVX-512 and AMX's 8-bit tiles, and Linux lets this process use them
/// (since 5.16 a process asks once; the answer holds for all its threads).
pub fn supported() -> bool {
    if !super::avx512::supported() {
        return false;
    }
    // Leaf 7 counts only where the CPU has it (leaf 0 says).
    let (max_leaf, leaf7) = (__cpuid(0).eax, __cpuid_count(7, 0));
    let (tile, int8) = (leaf7.edx & (1 << 24) != 0, leaf7.edx & (1 << 25) != 0);
    if max_leaf < 7 || !tile || !int8 {
        return false;
    }
    request_tiles()
}

#[cfg(target_os = "linux")]
fn request_tiles() -> bool {
    // ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA (asm/prctl.h): without it, the first tile
    // instruction raises SIGILL.
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: a system call that takes two integers and changes no memory of ours.
    let status = unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) };
    if status != 0 {
        tracing::info!("this CPU has AMX, but Linux did not grant its tiles: {}", std::io::Error::last_os_error());
    }
    status == 0
}

#[cfg(not(target_os = "linux"))]
fn request_tiles() -> bool {
    false
}

/// The activation rows as tiles load them: per block of sixteen rows and super-block, sixteen
/// rows of 256 values (rows past the last are zero), so one chunk of 64 values of sixteen rows is
/// one strided load.
pub struct Activations {
    bytes: AlignedBytes,
    blocks: usize,
    row_blocks: usize,
}

impl Activations {
    pub fn new(rows: &[Vec<Q8K>], blocks: usize) -> Self {
        let row_blocks = rows.len().div_ceil(TILE_ROWS);
        let mut bytes = AlignedBytes::zeroed(row_blocks * blocks * TILE_ROWS * QK_K);
        for (r, row) in rows.iter().enumerate() {
            for (i, b) in row[..blocks].iter().enumerate() {
                let at = ((r / TILE_ROWS * blocks + i) * TILE_ROWS + r % TILE_ROWS) * QK_K;
                for (d, &q) in bytes[at..at + QK_K].iter_mut().zip(&b.qs) {
                    *d = q as u8;
                }
            }
        }
        Self { bytes, blocks, row_blocks }
    }

    /// Where row block `rb`'s values of super-block `i`, chunk `c` (64 values) start.
    fn chunk(&self, rb: usize, i: usize, c: usize) -> *const u8 {
        self.bytes[((rb * self.blocks + i) * TILE_ROWS * QK_K + 64 * c)..].as_ptr()
    }
}

/// The tiles' shapes, for `ldtilecfg`: all eight are sixteen rows of 64 bytes.
/// - 0 and 1: the sums of `q × l` and `q × h` for the first row block, 2 and 3 for the second;
/// - 4 and 5: a chunk of each row block's activations;
/// - 6 and 7: a chunk of the weights times `l`, and times `h`.
///
/// [`q6k`] uses 0-3 for the sums of its four digits, 4 for the activations and 5-6 for the
/// weights.
#[repr(C, align(64))]
struct TileConfig {
    palette: u8,
    start_row: u8,
    reserved: [u8; 14],
    colsb: [u16; 16],
    rows: [u8; 16],
    reserved2: [u8; 16],
}

const CONFIG: TileConfig = TileConfig {
    palette: 1,
    start_row: 0,
    reserved: [0; 14],
    colsb: [64, 64, 64, 64, 64, 64, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0],
    rows: [16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0],
    reserved2: [0; 16],
};

/// Our tile shapes on this thread while kernels run, and the thread's own before and after.
/// The kernels take one as proof that the tiles are configured: a thread configures them once
/// for all the groups of weights it takes in a product, since loading a configuration is slow
/// next to the few super-blocks of a group (six in a 1,536-wide matrix).
///
/// candle's AMX kernels (its Q4_K products of 32 rows and more, on the same threads) configure a
/// thread's tiles once and expect that configuration to stay: a thread left unconfigured made
/// candle's next tile instruction fault (SIGILL), and one left with our shapes would give it
/// wrong products. So the configuration found is saved, and loaded again when the guard drops
/// (or the tiles released if there was none), even if it panics.
pub struct TileShapes {
    saved: TileConfig,
    /// Tile configuration belongs to a thread.
    _thread: std::marker::PhantomData<*const ()>,
}

impl TileShapes {
    /// # Safety
    /// The CPU must pass [`supported`].
    pub unsafe fn configure() -> Self {
        let mut saved = TileConfig { palette: 0, ..CONFIG };
        // SAFETY: the caller's CPU has AMX and this process its tiles; `sttilecfg` writes 64
        // bytes (zeros where the tiles are unconfigured) into `saved`, `ldtilecfg` reads ours.
        unsafe {
            asm!("sttilecfg [{}]", in(reg) &mut saved, options(nostack));
            asm!("ldtilecfg [{}]", in(reg) &CONFIG, options(nostack, readonly));
        }
        Self { saved, _thread: std::marker::PhantomData }
    }
}

impl Drop for TileShapes {
    fn drop(&mut self) {
        // SAFETY: `configure` ran on this CPU, which has AMX; the saved configuration is one
        // `sttilecfg` wrote, so valid.
        unsafe {
            if self.saved.palette == 0 {
                asm!("tilerelease", options(nostack, nomem));
            } else {
                asm!("ldtilecfg [{}]", in(reg) &self.saved, options(nostack, readonly));
            }
        }
    }
}

#[repr(C, align(64))]
struct Lines<const N: usize>([u8; N]);

/// Loads tile `$t` from `$p`, rows `$stride` bytes apart.
macro_rules! tile_load {
    ($t:literal, $p:expr, $stride:expr) => {
        asm!(concat!("tileloadd tmm", $t, ", [{p} + {s}*1]"), p = in(reg) $p, s = in(reg) $stride, options(nostack, readonly))
    };
}

/// Stores tile `$t` at `$p`, rows 64 bytes apart.
macro_rules! tile_store {
    ($t:literal, $p:expr) => {
        asm!(concat!("tilestored [{p} + {s}*1], tmm", $t), p = in(reg) $p, s = in(reg) 64usize, options(nostack))
    };
}

/// Sum tiles 0-3 to `s`, 1 KiB each.
#[inline(always)]
unsafe fn store_sums(s: *mut u8) {
    // SAFETY: the caller gives 4 KiB at `s`, on a CPU whose tiles are configured.
    unsafe {
        tile_store!(0, s);
        tile_store!(1, s.add(1024));
        tile_store!(2, s.add(2048));
        tile_store!(3, s.add(3072));
    }
}

/// Tile `$c` += signed bytes of tile `$a` times unsigned bytes of tile `$b`, in fours.
macro_rules! tile_dot {
    ($c:literal, $a:literal, $b:literal) => {
        asm!(concat!("tdpbsud tmm", $c, ", tmm", $a, ", tmm", $b), options(nostack, nomem))
    };
}

/// As [`tile_dot`], with signed bytes in tile `$b` too.
macro_rules! tile_dot_signed {
    ($c:literal, $a:literal, $b:literal) => {
        asm!(concat!("tdpbssd tmm", $c, ", tmm", $a, ", tmm", $b), options(nostack, nomem))
    };
}

/// Super-block `p`'s weights times the low and high parts of their scales, per chunk `c` of 64
/// values at `2048 c` and `2048 c + 1024` of `to`: sub-block 2c (low nibbles) in tile rows 0-7,
/// 2c + 1 (high nibbles) in rows 8-15.
#[inline(always)]
unsafe fn scaled_weights(p: *const u8, to: *mut u8) {
    // SAFETY: the caller gives a packed Q4_K super-block at `p` and 8 KiB at `to`, on a CPU with AVX-512.
    unsafe {
        let meta = 2048;
        let nibble = _mm512_set1_epi8(0x0F);
        // Each weight row's scale part in both 16-bit halves of its lane.
        let scale = |s: usize| _mm512_cvtepu8_epi32(_mm_loadu_si128(p.add(meta + 16 * s) as *const _));
        let halves = |x: __m512i| _mm512_or_si512(x, _mm512_slli_epi32(x, 16));
        for c in 0..4 {
            let (s0, s1) = (scale(2 * c), scale(2 * c + 1));
            let l0 = halves(_mm512_and_si512(s0, _mm512_set1_epi32(15)));
            let h0 = halves(_mm512_srli_epi32(s0, 4));
            let l1 = halves(_mm512_and_si512(s1, _mm512_set1_epi32(15)));
            let h1 = halves(_mm512_srli_epi32(s1, 4));
            let to = to.add(2048 * c);
            for g in 0..8 {
                prefetch(p, 64 * (8 * c + g));
                let v = _mm512_loadu_si512(p.add(64 * (8 * c + g)) as *const _);
                let lo = _mm512_and_si512(v, nibble);
                let hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
                // Byte products below 256 do not carry into the next byte of the word.
                _mm512_store_si512(to.add(64 * g) as *mut _, _mm512_mullo_epi16(lo, l0));
                _mm512_store_si512(to.add(1024 + 64 * g) as *mut _, _mm512_mullo_epi16(lo, h0));
                _mm512_store_si512(to.add(64 * (8 + g)) as *mut _, _mm512_mullo_epi16(hi, l1));
                _mm512_store_si512(to.add(1024 + 64 * (8 + g)) as *mut _, _mm512_mullo_epi16(hi, h1));
            }
        }
        for l in 0..5 {
            prefetch(p, meta + 64 * l);
        }
    }
}

/// Super-block `p`'s Q6_K weights as four tiles per chunk `c` of 64 values, at `4096 c + 1024 j`
/// of `to`: the values `q - 32` times digit `j` of their sub-block's scale (see [`q6k`]). Tile
/// row `t` of chunk `c` holds values `64 c + 4 t ..` of the sixteen weight rows: sub-block
/// `4 c + t / 4`.
///
/// Plain loops and no closures: called through closures, the intrinsics here were not inlined.
#[inline(always)]
unsafe fn q6k_scaled_weights(p: *const u8, to: *mut u8) {
    // SAFETY: the caller gives a packed Q6_K super-block at `p` and 16 KiB at `to`, on a CPU with AVX-512.
    unsafe {
        use super::avx512::{q6k_values, Packed};
        let meta = 3072;
        let (three, two, seven) = (_mm512_set1_epi32(3), _mm512_set1_epi32(2), _mm512_set1_epi32(7));
        let times32 = _mm512_set1_epi32(0x2020_2020);
        // Per sub-block, per weight row: the multipliers of the four digits (in both 16-bit
        // halves of the lane), then 32 times each digit in every byte of the lane.
        let mut digits = [[_mm512_setzero_si512(); 8]; 16];
        for (s, d) in digits.iter_mut().enumerate() {
            // The scale is 64 u_3 + 16 u_2 + 4 u_1 + u_0, with u_0..u_2 in 0..4 and u_3 in -2..2.
            // A value q (0..64) times a digit in 0..4 stays below 256 in its byte, so one 16-bit
            // multiply scales two values; subtracting 32 times the digit then gives (q - 32) × u,
            // which fits a signed byte. u_3 multiplies as u_3 + 2, and 2q more comes off.
            let sc = _mm512_cvtepi8_epi32(_mm_loadu_si128(p.add(meta + 16 * s) as *const _));
            let u0 = _mm512_and_si512(sc, three);
            let u1 = _mm512_and_si512(_mm512_srai_epi32(sc, 2), three);
            let u2 = _mm512_and_si512(_mm512_srai_epi32(sc, 4), three);
            let top = _mm512_srai_epi32(sc, 6);
            let u3 = _mm512_add_epi32(top, two);
            d[0] = _mm512_or_si512(u0, _mm512_slli_epi32(u0, 16));
            d[1] = _mm512_or_si512(u1, _mm512_slli_epi32(u1, 16));
            d[2] = _mm512_or_si512(u2, _mm512_slli_epi32(u2, 16));
            d[3] = _mm512_or_si512(u3, _mm512_slli_epi32(u3, 16));
            d[4] = _mm512_mullo_epi32(u0, times32);
            d[5] = _mm512_mullo_epi32(u1, times32);
            d[6] = _mm512_mullo_epi32(u2, times32);
            // -2..2 as 6, 7, 0, 1: times 32, the same bytes modulo 256.
            d[7] = _mm512_mullo_epi32(_mm512_and_si512(top, seven), times32);
        }
        for n in 0..2 {
            for g in 0..8 {
                let v = q6k_values::<Packed>(p, n, g);
                for k in 0..4 {
                    // Run k of half n, group g: chunk 2n + k / 2, tile row 8 (k % 2) + g, sub-block
                    // 8n + 2k + g / 4.
                    let at = to.add(4096 * (2 * n + k / 2) + 64 * (8 * (k % 2) + g));
                    let d = &digits[8 * n + 2 * k + g / 4];
                    let x = v[k];
                    _mm512_store_si512(at as *mut _, _mm512_sub_epi8(_mm512_mullo_epi16(x, d[0]), d[4]));
                    _mm512_store_si512(at.add(1024) as *mut _, _mm512_sub_epi8(_mm512_mullo_epi16(x, d[1]), d[5]));
                    _mm512_store_si512(at.add(2048) as *mut _, _mm512_sub_epi8(_mm512_mullo_epi16(x, d[2]), d[6]));
                    let b3 = _mm512_sub_epi8(_mm512_mullo_epi16(x, d[3]), d[7]);
                    _mm512_store_si512(at.add(3072) as *mut _, _mm512_sub_epi8(b3, _mm512_add_epi8(x, x)));
                }
            }
        }
    }
}

/// A thread's buffers for [`q4k`] and [`q6k`], kept from one group of weights to the next.
pub struct Scratch {
    /// Per activation row, the sums of even and of odd super-blocks (the reference's order).
    acc: Vec<[[f32; 16]; 2]>,
    /// Two super-blocks' scaled weights: the one the tiles read, and the next.
    weights: [Lines<16384>; 2],
    /// The four sum tiles of two pairs of row blocks: the one the tiles fill, and the one the
    /// vector units read.
    sums: Lines<8192>,
}

impl Scratch {
    pub fn new(rows: usize) -> Box<Self> {
        Box::new(Self {
            acc: vec![[[0.0; 16]; 2]; rows],
            weights: [Lines([0; 16384]), Lines([0; 16384])],
            sums: Lines([0; 8192]),
        })
    }
}

/// Sixteen packed Q4_K rows (`w`: their super-blocks in order) times every activation row:
/// `out[r][l]` is weight row `l` times activation row `r`, as [`super::avx512::q4k`] computes it.
///
/// The tile unit runs beside the vector units: while it multiplies a pair of row blocks, the
/// vector units turn the previous pair's sums into floats, then scale the next super-block's
/// weights.
///
/// # Safety
/// The CPU must pass [`supported`]; `tiles` holds `acts`' rows (prepared for Q4_K) with as many
/// blocks as `w`, and `out` and `scratch` have a row for each.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
pub unsafe fn q4k(
    w: &[u8],
    tiles: &Activations,
    acts: &[ActRow],
    _shapes: &TileShapes,
    scratch: &mut Scratch,
    out: &mut [[f32; 16]],
) {
    // SAFETY: the caller upholds this function's contract (# Safety above): the CPU runs AVX-512
    // and the tiles, every load stays inside `w`, `tiles` and `acts`, every store inside
    // `scratch` and `out`.
    unsafe {
        let (m, blocks) = (acts.len(), w.len() / Q4K_PACKED);
        debug_assert!(out.len() >= m && scratch.acc.len() >= m);
        debug_assert!(tiles.row_blocks == m.div_ceil(TILE_ROWS) && blocks == tiles.blocks);
        let meta = 2048;
        let acc = &mut scratch.acc[..m];
        acc.fill([[0.0; 16]; 2]);
        let pairs = tiles.row_blocks.div_ceil(2);
        let sums = scratch.sums.0.as_mut_ptr();
        scaled_weights(w.as_ptr(), scratch.weights[0].0.as_mut_ptr());
        for i in 0..blocks {
            let p = w.as_ptr().add(i * Q4K_PACKED);
            let wl = scratch.weights[i % 2].0.as_ptr();
            let mins: [__m512i; 4] =
                std::array::from_fn(|q| _mm512_cvtepu8_epi16(_mm256_loadu_si256(p.add(meta + 128 + 32 * q) as *const _)));
            let d = _mm512_cvtph_ps(_mm256_loadu_si256(p.add(meta + 256) as *const _));
            let dmin = _mm512_cvtph_ps(_mm256_loadu_si256(p.add(meta + 288) as *const _));
            // Pair `pair`'s sums into floats, from its half of `sums`.
            let floats = |pair: usize, acc: &mut [[[f32; 16]; 2]]| {
                let s = sums.add(4096 * (pair % 2));
                for r in 2 * TILE_ROWS * pair..m.min(2 * TILE_ROWS * (pair + 1)) {
                    let load = |at: usize| _mm512_load_si512(s.add(at) as *const _);
                    let row = 64 * (r % TILE_ROWS);
                    // Tiles 0 and 1 (2 and 3): the first (second) row block's sums of `q × l`
                    // and `q × h`.
                    let t = 2048 * ((r / TILE_ROWS) % 2) + row;
                    let isum = _mm512_add_epi32(load(t), _mm512_slli_epi32(load(t + 1024), 4));
                    let mut msum = _mm512_setzero_si512();
                    for (q, mins) in mins.iter().enumerate() {
                        let sums = _mm512_set1_epi32(*acts[r].pairs.get_unchecked(4 * i + q));
                        msum = _mm512_dpwssd_epi32(msum, *mins, sums);
                    }
                    // The AVX-512 kernel's float operations, in its order.
                    let ad = _mm512_set1_ps(acts[r].q8.get_unchecked(i).d);
                    let v = _mm512_mul_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d, ad));
                    let v = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(dmin, ad), v);
                    let a = acc[r][i & 1].as_mut_ptr();
                    _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), v));
                }
            };
            for pair in 0..pairs {
                let (rb, two) = (2 * pair, 2 * pair + 1 < tiles.row_blocks);
                asm!("tilezero tmm0", "tilezero tmm1", "tilezero tmm2", "tilezero tmm3", options(nostack, nomem));
                for c in 0..4 {
                    tile_load!(6, wl.add(2048 * c), 64usize);
                    tile_load!(7, wl.add(2048 * c + 1024), 64usize);
                    tile_load!(4, tiles.chunk(rb, i, c), QK_K);
                    tile_dot!(0, 4, 6);
                    tile_dot!(1, 4, 7);
                    if two {
                        tile_load!(5, tiles.chunk(rb + 1, i, c), QK_K);
                        tile_dot!(2, 5, 6);
                        tile_dot!(3, 5, 7);
                    }
                }
                let s = sums.add(4096 * (pair % 2));
                tile_store!(0, s);
                tile_store!(1, s.add(1024));
                if two {
                    tile_store!(2, s.add(2048));
                    tile_store!(3, s.add(3072));
                }
                if pair > 0 {
                    floats(pair - 1, acc);
                }
            }
            if i + 1 < blocks {
                scaled_weights(p.add(Q4K_PACKED), scratch.weights[(i + 1) % 2].0.as_mut_ptr());
            }
            floats(pairs - 1, acc);
        }
        for (o, [a0, a1]) in out.iter_mut().zip(acc.iter()) {
            _mm512_storeu_ps(o.as_mut_ptr(), _mm512_add_ps(_mm512_loadu_ps(a0.as_ptr()), _mm512_loadu_ps(a1.as_ptr())));
        }
    }
}

/// As [`q4k`], for packed Q6_K rows.
///
/// A Q6_K value is `q - 32` (`q` below 64) times its sub-block's signed 8-bit scale, which
/// splits into four base-4 digits (the top one signed): `(q - 32) ×` a digit fits a signed byte,
/// so the tiles sum each digit's products, and `isum = C_0 + 4 C_1 + 16 C_2 + 64 C_3` is the
/// AVX-512 kernel's exact integer ([`super::avx512::q6k`]).
///
/// # Safety
/// As [`q4k`], with the rows prepared for Q6_K.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
pub unsafe fn q6k(
    w: &[u8],
    tiles: &Activations,
    acts: &[ActRow],
    _shapes: &TileShapes,
    scratch: &mut Scratch,
    out: &mut [[f32; 16]],
) {
    // SAFETY: as in `q4k`.
    unsafe {
        let (m, blocks) = (acts.len(), w.len() / Q6K_PACKED);
        debug_assert!(out.len() >= m && scratch.acc.len() >= m);
        debug_assert!(tiles.row_blocks == m.div_ceil(TILE_ROWS) && blocks == tiles.blocks);
        let acc = &mut scratch.acc[..m];
        acc.fill([[0.0; 16]; 2]);
        let sums = scratch.sums.0.as_mut_ptr();
        q6k_scaled_weights(w.as_ptr(), scratch.weights[0].0.as_mut_ptr());
        for i in 0..blocks {
            let p = w.as_ptr().add(i * Q6K_PACKED);
            let wt = scratch.weights[i % 2].0.as_ptr();
            let d = _mm512_cvtph_ps(_mm256_loadu_si256(p.add(3328) as *const _));
            // Row block `rb`'s sums into floats, from its half of `sums`.
            let floats = |rb: usize, acc: &mut [[[f32; 16]; 2]]| {
                let s = sums.add(4096 * (rb % 2));
                for r in TILE_ROWS * rb..m.min(TILE_ROWS * (rb + 1)) {
                    let load = |at: usize| _mm512_load_si512(s.add(at + 64 * (r % TILE_ROWS)) as *const _);
                    let low = _mm512_add_epi32(load(0), _mm512_slli_epi32(load(1024), 2));
                    let high = _mm512_add_epi32(load(2048), _mm512_slli_epi32(load(3072), 2));
                    let isum = _mm512_add_epi32(low, _mm512_slli_epi32(high, 4));
                    // The AVX-512 kernel's float operations, in its order.
                    let ad = _mm512_set1_ps(acts[r].q8.get_unchecked(i).d);
                    let v = _mm512_mul_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d, ad));
                    let a = acc[r][i & 1].as_mut_ptr();
                    _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), v));
                }
            };
            for rb in 0..tiles.row_blocks {
                asm!("tilezero tmm0", "tilezero tmm1", "tilezero tmm2", "tilezero tmm3", options(nostack, nomem));
                for c in 0..4 {
                    let b = wt.add(4096 * c);
                    tile_load!(4, tiles.chunk(rb, i, c), QK_K);
                    tile_load!(5, b, 64usize);
                    tile_dot_signed!(0, 4, 5);
                    tile_load!(6, b.add(1024), 64usize);
                    tile_dot_signed!(1, 4, 6);
                    tile_load!(5, b.add(2048), 64usize);
                    tile_dot_signed!(2, 4, 5);
                    tile_load!(6, b.add(3072), 64usize);
                    tile_dot_signed!(3, 4, 6);
                }
                let s = sums.add(4096 * (rb % 2));
                store_sums(s);
                if rb > 0 {
                    floats(rb - 1, acc);
                }
            }
            if i + 1 < blocks {
                q6k_scaled_weights(p.add(Q6K_PACKED), scratch.weights[(i + 1) % 2].0.as_mut_ptr());
            }
            floats(tiles.row_blocks - 1, acc);
        }
        for (o, [a0, a1]) in out.iter_mut().zip(acc.iter()) {
            _mm512_storeu_ps(o.as_mut_ptr(), _mm512_add_ps(_mm512_loadu_ps(a0.as_ptr()), _mm512_loadu_ps(a1.as_ptr())));
        }
    }
}
