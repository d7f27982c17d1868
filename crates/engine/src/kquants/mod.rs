//! Matrix products over GGUF K-quant blocks (Q4_K, Q6_K).
//!
//! candle 0.11 repacks these weights into wider tiles on first use (1.3–1.5× the file's bytes,
//! kept next to the originals) and picks a different Q6_K kernel for one row than for several,
//! so a sequence's output could depend on what it is batched with. Here, with AVX-512 or AVX2,
//! the weights are packed once at load into groups of sixteen interleaved rows ([`packed`]: the
//! file's bytes moved, 0–3 % larger, the originals dropped), which the kernels read a register
//! of sixteen rows ([`avx512`]) or eight ([`avx2`]) at a time. Other CPUs, and a matrix whose
//! row count is not a multiple of sixteen, read the file's rows as they are ([`reference`],
//! [`avx2`]'s row kernels). On Intel CPUs with AMX, products of many activation rows run on its
//! tile unit instead ([`amx`]), reading the same packing. Activations are quantized to 8 bits
//! per 256 values (ggml's Q8_K, with candle's rounding), so each super-block's product is an
//! exact integer sum, and every kernel turns those sums into the same floats in the same order
//! ([`reference`]): an output's bits do not depend on the kernel, nor on the other rows of its
//! batch.

#[cfg(target_arch = "x86_64")]
mod amx;
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
pub mod packed;
pub mod reference;
#[cfg(test)]
pub(crate) mod test_cases;

use crate::huge_pages::HugeBuffer;
use crate::parallel::{self, Columns};
use candle_core::quantized::{GgmlDType, QStorage, QTensor};
use candle_core::{Device, Tensor};

/// Which code multiplies quantized weights: K-quants (Q4_K, Q6_K) and the 32-value blocks
/// (Q8_0, Q5_0, Q4_0, see [`crate::legacy_quants`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KQuantKernels {
    /// Ponder's (this module and [`crate::legacy_quants`]): K-quant weights packed once at load
    /// into a copy of about the same size (the file's dropped), the same bits for a sequence
    /// whatever its batch, about twice candle's speed reading weights from memory
    /// (single-stream decoding), and SIMD chosen at run time for the CPU.
    #[default]
    Ponder,
    /// candle's, which repack K-quant weights on first use into a second, larger copy next to
    /// the file's, and pick their SIMD when they are compiled: the baseline `ponder bench`
    /// compares against.
    Candle,
}
use std::sync::{Arc, OnceLock};

pub const QK_K: usize = 256;
pub const Q4K_BYTES: usize = 144;
pub const Q6K_BYTES: usize = 210;

/// From this many activation rows on, the AVX-512 Q6_K products unpack each group of weights to
/// bytes once and read those, instead of unpacking as they go (once per four rows). Measured
/// (`cargo bench --bench kquants`): 8% faster at 64 rows, slower at 8 and 16; and slower for
/// Q4_K at any count, whose unpacking is only two `vpand`s.
pub const Q6K_UNPACK_FROM_ROWS: usize = 32;

/// The block formats these kernels read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Q4K,
    Q6K,
}

impl Format {
    pub fn from_ggml(dtype: GgmlDType) -> Option<Self> {
        match dtype {
            GgmlDType::Q4K => Some(Self::Q4K),
            GgmlDType::Q6K => Some(Self::Q6K),
            _ => None,
        }
    }

    pub fn block_bytes(self) -> usize {
        match self {
            Self::Q4K => Q4K_BYTES,
            Self::Q6K => Q6K_BYTES,
        }
    }
}

/// 256 activations as 8-bit integers with one scale, and sums of each 16 (for the formats'
/// offsets and minimums).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Q8K {
    pub d: f32,
    pub qs: [i8; QK_K],
    pub bsums: [i16; QK_K / 16],
}

impl Q8K {
    pub(crate) const ZERO: Self = Self { d: 0.0, qs: [0; QK_K], bsums: [0; QK_K / 16] };

    /// Quantizes one row (a multiple of 256 values), rounding exactly as candle does.
    pub fn quantize_row(xs: &[f32]) -> Vec<Self> {
        #[cfg(target_arch = "x86_64")]
        if Kernel::chosen() >= Kernel::Avx512 {
            // SAFETY: the CPU has AVX-512; each chunk is 256 values.
            return xs.chunks_exact(QK_K).map(|b| unsafe { avx512::quantize(b.try_into().unwrap()) }).collect();
        }
        xs.chunks_exact(QK_K).map(|b| Self::quantize_block(b.try_into().unwrap())).collect()
    }

    /// candle's quantization of 256 values: the definition the SIMD version is tested against.
    pub fn quantize_block(xs: &[f32; QK_K]) -> Self {
        let mut y = Self::ZERO;
        let (mut max, mut amax) = (0f32, 0f32);
        for &x in xs {
            if amax < x.abs() {
                amax = x.abs();
                max = x;
            }
        }
        if amax == 0.0 {
            return y;
        }
        let iscale = -127f32 / max;
        for (q, &x) in y.qs.iter_mut().zip(xs) {
            *q = crate::round::half_away(iscale * x).clamp(-128.0, 127.0) as i8;
        }
        for (j, s) in y.bsums.iter_mut().enumerate() {
            *s = y.qs[16 * j..16 * j + 16].iter().map(|&q| q as i16).sum();
        }
        y.d = 1.0 / iscale;
        y
    }
}

/// ggml's 6-bit packing of Q4_K's eight scales and eight minimums.
#[inline(always)]
pub(crate) fn scale_min_k4(j: usize, q: &[u8; 12]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        ((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4))
    }
}

pub(crate) fn f16_at(b: &[u8], at: usize) -> f32 {
    half::f16::from_le_bytes([b[at], b[at + 1]]).to_f32()
}

/// Which implementation runs: the fastest the CPU supports, unless [`KERNEL_ENV`] names a
/// slower one.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kernel {
    Reference,
    Avx2,
    Avx512,
    /// AVX-512, with Q4_K and Q6_K products of many activation rows on Intel's AMX tiles
    /// ([`amx`]).
    Amx,
}

/// Names the kernel to use (`reference`, `avx2`, `avx512` or `amx`) instead of the CPU's fastest: how
/// the tests run the fallbacks a CPU without AVX-512 or AVX2 would, on one that has both. A
/// kernel the CPU cannot run is refused with a warning, and the fastest it can run is used.
pub const KERNEL_ENV: &str = "PONDER_CPU_KERNEL";

impl Kernel {
    /// The kernel in use, chosen once per process.
    pub fn chosen() -> Self {
        static CHOSEN: OnceLock<Kernel> = OnceLock::new();
        *CHOSEN.get_or_init(|| {
            let fastest = Self::fastest();
            let Ok(name) = std::env::var(KERNEL_ENV) else { return fastest };
            match Self::parse(&name) {
                Some(k) if k <= fastest => k,
                Some(k) => {
                    tracing::warn!(
                        "{KERNEL_ENV}={name}: this CPU cannot run the {} kernels; using {}",
                        k.label(),
                        fastest.label()
                    );
                    fastest
                }
                None => {
                    tracing::warn!("{KERNEL_ENV}={name}: not one of reference, avx2, avx512, amx; using {}", fastest.label());
                    fastest
                }
            }
        })
    }

    /// The fastest kernel this CPU runs (asked once: AMX needs the operating system's leave).
    pub fn fastest() -> Self {
        static FASTEST: OnceLock<Kernel> = OnceLock::new();
        *FASTEST.get_or_init(Self::detect)
    }

    fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if amx::supported() {
                return Kernel::Amx;
            }
            if avx512::supported() {
                return Kernel::Avx512;
            }
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c") {
                return Kernel::Avx2;
            }
        }
        Kernel::Reference
    }

    pub fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().replace(['-', '_'], "").as_str() {
            "reference" => Some(Self::Reference),
            "avx2" => Some(Self::Avx2),
            "avx512" => Some(Self::Avx512),
            "amx" => Some(Self::Amx),
            _ => None,
        }
    }

    /// How people name the instruction sets: "AVX-512".
    pub fn label(self) -> &'static str {
        match self {
            Self::Reference => "reference (no SIMD)",
            Self::Avx2 => "AVX2",
            Self::Avx512 => "AVX-512",
            Self::Amx => "AVX-512 + AMX",
        }
    }

    /// Kernels this CPU can run, for tests that compare them.
    pub fn available() -> Vec<Self> {
        let fastest = Self::fastest();
        [Self::Reference, Self::Avx2, Self::Avx512, Self::Amx].into_iter().filter(|k| *k <= fastest).collect()
    }

    /// Whether matrices are packed at load for this kernel ([`packed`]) rather than read as the
    /// file's rows.
    pub fn packs(self) -> bool {
        matches!(self, Self::Avx2 | Self::Avx512 | Self::Amx)
    }

    /// How many activation rows one call of [`Kernel::dot_rows`] takes at most.
    pub const MAX_ROWS: usize = 4;

    /// Dots of one weight row (GGUF blocks as in the file) with up to [`Kernel::MAX_ROWS`]
    /// activation rows, into `out`. AVX-512 reads packed weights instead (see [`matmul`]); here
    /// it runs the AVX2 kernel, which returns the same bits.
    pub fn dot_rows(self, format: Format, w: &[u8], acts: &[&[Q8K]], out: &mut [f32]) {
        assert!(acts.len() <= Self::MAX_ROWS && acts.len() == out.len());
        let blocks = w.len() / format.block_bytes();
        assert!(acts.iter().all(|a| a.len() >= blocks) && w.len().is_multiple_of(format.block_bytes()));
        match self {
            Kernel::Reference => match format {
                Format::Q4K => reference::dot_q4k(w, acts, out),
                Format::Q6K => reference::dot_q6k(w, acts, out),
            },
            // SAFETY: AVX-512 and AVX2 were chosen by `chosen` for this CPU (AVX-512 implies
            // AVX2), and the shapes are checked above.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 | Kernel::Avx512 | Kernel::Amx => unsafe {
                macro_rules! go {
                    ($f:ident) => {
                        match acts.len() {
                            1 => avx2::$f::<1>(w, acts, out),
                            2 => avx2::$f::<2>(w, acts, out),
                            3 => avx2::$f::<3>(w, acts, out),
                            4 => avx2::$f::<4>(w, acts, out),
                            _ => {}
                        }
                    };
                }
                match format {
                    Format::Q4K => go!(q4k),
                    Format::Q6K => go!(q6k),
                }
            },
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!("only the reference kernel exists off x86-64"),
        }
    }
}

/// A weight matrix of `n` rows by `k` columns in a K-quant format: packed for the AVX-512
/// kernels ([`packed`], about the size of the file's tensor, which is then dropped), or kept as
/// loaded from the file for the others.
#[derive(Debug, Clone)]
pub struct KQuantMatrix {
    stored: Stored,
    format: Format,
    n: usize,
    k: usize,
}

#[derive(Debug, Clone)]
enum Stored {
    Rows(Arc<QTensor>),
    Packed(Arc<HugeBuffer>),
}

impl KQuantMatrix {
    /// The matrix, if its format is one of ours and it lives in CPU memory.
    pub fn new(tensor: Arc<QTensor>) -> Option<Self> {
        let format = Format::from_ggml(tensor.dtype())?;
        let (n, k) = tensor.shape().dims2().ok()?;
        if !matches!(tensor.device(), Device::Cpu) || k % QK_K != 0 {
            return None;
        }
        let stored = if Kernel::chosen().packs() && n % packed::ROWS == 0 {
            Stored::Packed(Arc::new(packed::pack(format, &tensor.data().ok()?, n, k / QK_K)))
        } else {
            Stored::Rows(tensor)
        };
        Some(Self { stored, format, n, k })
    }

    /// `x (m, k)` times the transposed weights: `(m, n)`.
    pub fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        Ok(Self::forward_all(&[self], x)?.remove(0))
    }

    /// `x (m, k)` times each matrix (all `k` columns wide): packed matrices share one
    /// quantization of `x` and one parallel pass, which matters for the small ones.
    pub fn forward_all(mats: &[&Self], x: &Tensor) -> candle_core::Result<Vec<Tensor>> {
        let (m, k) = x.dims2()?;
        if let Some(w) = mats.iter().find(|w| w.k != k) {
            candle_core::bail!("matmul of {k} columns against a {}×{} weight", w.n, w.k);
        }
        crate::tensor_values::with_values(x, |xs| Self::forward_values(mats, xs, m, k, x.device()))?
    }

    /// [`KQuantMatrix::forward_all`] of `m` rows of `k` values.
    fn forward_values(mats: &[&Self], xs: &[f32], m: usize, k: usize, device: &Device) -> candle_core::Result<Vec<Tensor>> {
        let tensor = |out: Vec<f32>, n: usize| Tensor::from_vec(out, (m, n), device);
        #[cfg(target_arch = "x86_64")]
        {
            let parts: Option<Vec<Part>> = mats
                .iter()
                .map(|w| match &w.stored {
                    Stored::Packed(p) => Some(Part { format: w.format, w: p, n: w.n }),
                    Stored::Rows(_) => None,
                })
                .collect();
            if let Some(parts) = parts {
                return matmul_packed(Kernel::chosen(), &parts, k, xs, m)
                    .into_iter()
                    .zip(mats)
                    .map(|(o, w)| tensor(o, w.n))
                    .collect();
            }
        }
        // Some matrices kept their rows (a row count not a multiple of 16): one at a time.
        mats.iter()
            .map(|w| {
                let out = match &w.stored {
                    Stored::Rows(t) => matmul(Kernel::chosen(), w.format, &t.data()?, w.n, k, xs, m),
                    #[cfg(target_arch = "x86_64")]
                    Stored::Packed(p) => {
                        matmul_packed(Kernel::chosen(), &[Part { format: w.format, w: p, n: w.n }], k, xs, m).remove(0)
                    }
                    #[cfg(not(target_arch = "x86_64"))]
                    Stored::Packed(_) => unreachable!("packing is for the x86-64 kernels"),
                };
                tensor(out, w.n)
            })
            .collect()
    }

    /// Rows `ids` of the matrix as f32 `(len, k)`: an embedding lookup in a quantized table.
    pub fn rows(&self, ids: &Tensor) -> candle_core::Result<Tensor> {
        match &self.stored {
            Stored::Rows(t) => t.embedding(ids),
            Stored::Packed(p) => {
                let dtype = match self.format {
                    Format::Q4K => GgmlDType::Q4K,
                    Format::Q6K => GgmlDType::Q6K,
                };
                packed_rows(ids, self.n, self.k, dtype, |row| packed::unpack_row(self.format, p, self.k / QK_K, row))
            }
        }
    }
}

/// Rows `ids` of a packed `(n, k)` table in format `dtype` as f32 `(len, k)`, each row's GGUF
/// blocks read back by `unpack_row` and dequantized by candle.
pub(crate) fn packed_rows(
    ids: &Tensor,
    n: usize,
    k: usize,
    dtype: GgmlDType,
    unpack_row: impl Fn(usize) -> Vec<u8>,
) -> candle_core::Result<Tensor> {
    let ids = ids.flatten_all()?.to_vec1::<u32>()?;
    let mut bytes = Vec::new();
    for &id in &ids {
        if id as usize >= n {
            candle_core::bail!("row {id} of a table of {n} rows");
        }
        bytes.extend(unpack_row(id as usize));
    }
    let storage = QStorage::from_data(bytes.into(), &Device::Cpu, dtype)?;
    QTensor::new(storage, (ids.len(), k))?.dequantize(&Device::Cpu)
}

/// The activations quantized to Q8K, one row per input row (in parallel for more than a few).
fn quantize_rows(xs: &[f32], k: usize, m: usize) -> Vec<Vec<Q8K>> {
    if m > 4 {
        parallel::map(m, |i| Q8K::quantize_row(&xs[i * k..(i + 1) * k]))
    } else {
        xs.chunks_exact(k).map(Q8K::quantize_row).collect()
    }
}

/// `(m, k)` activations times the `(n, k)` weights in `w` (GGUF blocks), transposed: an
/// `(m, n)` row-major result. Threads split the weight rows; each is read once for all `m` rows.
pub fn matmul(kernel: Kernel, format: Format, w: &[u8], n: usize, k: usize, xs: &[f32], m: usize) -> Vec<f32> {
    let blocks = k / QK_K;
    let row_bytes = blocks * format.block_bytes();
    assert_eq!(w.len(), n * row_bytes, "weight bytes do not match {n}×{k}");
    assert_eq!(xs.len(), m * k);
    #[cfg(target_arch = "x86_64")]
    if kernel.packs() && n.is_multiple_of(packed::ROWS) {
        let w = packed::pack(format, w, n, blocks);
        return matmul_packed(kernel, &[Part { format, w: &w, n }], k, xs, m).remove(0);
    }
    let acts = quantize_rows(xs, k, m);
    let acts: Vec<&[Q8K]> = acts.iter().map(|a| a.as_slice()).collect();
    let mut out = vec![0f32; m * n];
    let columns = Columns::new(&mut out, n);
    parallel::for_chunks(n, |rows| {
        let mut res = [0f32; 4];
        for j in rows {
            let row = &w[j * row_bytes..(j + 1) * row_bytes];
            for (c, a) in acts.chunks(Kernel::MAX_ROWS).enumerate() {
                kernel.dot_rows(format, row, a, &mut res[..a.len()]);
                for (l, &v) in res[..a.len()].iter().enumerate() {
                    // SAFETY: this task alone handles weight row `j`, so column `j`.
                    unsafe { columns.set(c * Kernel::MAX_ROWS + l, j, &[v]) };
                }
            }
        }
    });
    out
}

/// One packed matrix ([`packed::pack`]) of a product.
#[cfg(target_arch = "x86_64")]
struct Part<'a> {
    format: Format,
    w: &'a [u8],
    n: usize,
}

/// [`matmul`] of the same activations by several packed matrices with `kernel` (AVX-512 or
/// AVX2; the engine passes [`Kernel::chosen`], the tests each kernel the CPU runs): the
/// activations are quantized once, and one parallel pass covers every matrix's groups.
#[cfg(target_arch = "x86_64")]
fn matmul_packed(kernel: Kernel, parts: &[Part], k: usize, xs: &[f32], m: usize) -> Vec<Vec<f32>> {
    assert!(kernel.packs() && kernel <= Kernel::fastest(), "packed weights need the AVX2 or AVX-512 kernels: {kernel:?}");
    assert_eq!(xs.len(), m * k);
    let blocks = k / QK_K;
    let group_bytes = |f: Format| blocks * packed::packed_bytes(f);
    assert!(parts.iter().all(|p| p.n % packed::ROWS == 0 && p.w.len() == p.n / packed::ROWS * group_bytes(p.format)));
    let q8 = quantize_rows(xs, k, m);
    let acts: Vec<packed::ActRow> = q8.iter().map(|q| packed::ActRow::new(q)).collect();
    // Enough rows for AMX's tiles (per format): those matrices run there, on the activations laid
    // out for tiles.
    let on_tiles = |f: Format| kernel == Kernel::Amx && m >= amx::from_rows(f);
    let tiles = parts.iter().any(|p| on_tiles(p.format)).then(|| amx::Activations::new(&q8, blocks));
    // Every part's groups in one list: part `i`'s start at `starts[i]`.
    let starts: Vec<usize> = parts.iter().scan(0, |at, p| Some(std::mem::replace(at, *at + p.n / packed::ROWS))).collect();
    let groups: usize = parts.iter().map(|p| p.n / packed::ROWS).sum();
    let widths: Vec<usize> = parts.iter().map(|p| p.n).collect();
    let fill = |columns: &[Columns]| {
        parallel::for_chunks(groups, |items| {
            let mut bytes = crate::huge_pages::AlignedBytes::default();
            // SAFETY: `tiles` is built for the AMX kernel only, which this CPU runs (`kernel <=
            // Kernel::fastest()`).
            let mut amx_out =
                tiles.is_some().then(|| (unsafe { amx::TileShapes::configure() }, amx::Scratch::new(m), vec![[0f32; 16]; m]));
            for item in items {
                let pi = starts.partition_point(|&s| s <= item) - 1;
                let (part, gi) = (&parts[pi], item - starts[pi]);
                let gb = group_bytes(part.format);
                // A group's weights stay in cache while every four activation rows pass over them.
                let mut gw = &part.w[gi * gb..(gi + 1) * gb];
                if let (Some(tiles), Some((shapes, scratch, res)), true) = (&tiles, &mut amx_out, on_tiles(part.format)) {
                    // SAFETY: this CPU runs the tiles (`tiles` is built for the AMX kernel only,
                    // which `kernel <= Kernel::fastest()` allows); `tiles`, `scratch` and `res`
                    // hold every row.
                    unsafe {
                        match part.format {
                            Format::Q4K => amx::q4k(gw, tiles, &acts, shapes, scratch, res),
                            Format::Q6K => amx::q6k(gw, tiles, &acts, shapes, scratch, res),
                        }
                    };
                    for (r, vals) in res.iter().enumerate() {
                        // SAFETY: this task alone handles group `gi` of part `pi`, so these columns.
                        unsafe { columns[pi].set(r, gi * packed::ROWS, vals) };
                    }
                    continue;
                }
                // With many activation rows, a Q6_K group is unpacked to bytes once, not per four
                // rows (AVX-512 only).
                let unpack = kernel >= Kernel::Avx512 && part.format == Format::Q6K && m >= Q6K_UNPACK_FROM_ROWS;
                if unpack {
                    // SAFETY: this CPU runs AVX-512 (asserted above); `gw` holds whole packed Q6_K blocks.
                    unsafe { avx512::unpack_q6k(gw, &mut bytes) };
                    gw = &bytes;
                }
                for (c, a) in acts.chunks(packed::MAX_ROWS).enumerate() {
                    let mut res = [[0f32; 16]; packed::MAX_ROWS];
                    // SAFETY: this CPU runs `kernel` (asserted above); every activation row has
                    // `blocks` blocks.
                    unsafe {
                        macro_rules! go {
                            ($m:ident :: $f:ident $(, $s:ty)?) => {
                                match a.len() {
                                    1 => $m::$f::<1 $(, $s)?>(gw, a, &mut res),
                                    2 => $m::$f::<2 $(, $s)?>(gw, a, &mut res),
                                    3 => $m::$f::<3 $(, $s)?>(gw, a, &mut res),
                                    _ => $m::$f::<4 $(, $s)?>(gw, a, &mut res),
                                }
                            };
                        }
                        match (kernel, part.format, unpack) {
                            (Kernel::Avx512 | Kernel::Amx, Format::Q4K, _) => go!(avx512::q4k),
                            (Kernel::Avx512 | Kernel::Amx, Format::Q6K, false) => go!(avx512::q6k, avx512::Packed),
                            (Kernel::Avx512 | Kernel::Amx, Format::Q6K, true) => go!(avx512::q6k, avx512::Unpacked),
                            (_, Format::Q4K, _) => go!(avx2::q4k_packed),
                            (_, Format::Q6K, _) => go!(avx2::q6k_packed),
                        }
                    }
                    for (r, vals) in res[..a.len()].iter().enumerate() {
                        // SAFETY: this task alone handles group `gi` of part `pi`, so these columns.
                        unsafe { columns[pi].set(c * packed::MAX_ROWS + r, gi * packed::ROWS, vals) };
                    }
                }
            }
        })
    };
    // SAFETY: the groups cover every part's columns, and each group writes all `m` rows of its own.
    unsafe { parallel::columns_written(m, &widths, fill) }
}

#[cfg(test)]
mod tests {
    use super::test_cases::{candle_product, case, max_rel};
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn quantized_activations_match_candles_q8k() {
        let (_, x) = case(GgmlDType::Q4K, 1, 512, 1, 1);
        let ours = Q8K::quantize_row(&x);
        let t = Tensor::from_vec(x.clone(), (1, 512), &Device::Cpu).unwrap();
        let theirs = QTensor::quantize(&t, GgmlDType::Q8K).unwrap();
        let bytes = theirs.data().unwrap();
        for (i, b) in ours.iter().enumerate() {
            let raw = &bytes[i * 292..(i + 1) * 292];
            assert_eq!(f32::from_le_bytes(raw[0..4].try_into().unwrap()), b.d);
            assert!(b.qs.iter().zip(&raw[4..260]).all(|(q, r)| *q as u8 == *r));
            let bsums: Vec<i16> = raw[260..292].chunks(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect();
            assert_eq!(bsums, b.bsums);
        }
    }

    #[test]
    fn every_quantizer_rounds_like_candle() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let mut rows: Vec<[f32; QK_K]> = (0..200).map(|_| std::array::from_fn(|_| rng.random_range(-3.0f32..3.0))).collect();
        // Ties (x.5 after scaling by 1 when the largest value is -127) round away from zero;
        // equal magnitudes of both signs (the first wins); zeros, NaN and infinities.
        rows.push(std::array::from_fn(|i| [-127.0, 2.5, -2.5, 0.5, -0.5, 126.5, 127.0, 3.0][i % 8]));
        rows.push(std::array::from_fn(|i| if i % 3 == 0 { 4.0 } else { -4.0 }));
        rows.push([0.0; QK_K]);
        rows.push(std::array::from_fn(|i| if i == 7 { f32::NAN } else { 0.0 }));
        rows.push(std::array::from_fn(|i| if i == 9 { f32::NAN } else { i as f32 - 100.0 }));
        rows.push(std::array::from_fn(|i| if i == 3 { f32::INFINITY } else { 1.0 }));
        for xs in &rows {
            let want = Q8K::quantize_block(xs);
            let got = &Q8K::quantize_row(xs)[0];
            assert!(got.d.to_bits() == want.d.to_bits() && got.qs == want.qs && got.bsums == want.bsums, "{xs:?}");
        }
    }

    #[test]
    fn every_kernel_returns_the_references_bits_close_to_candle() {
        // One row, a few, and enough for Q6_K's unpacked groups, with remainders of four; weights
        // packed (48 rows) and read as rows (40: not a multiple of sixteen).
        for (m, n) in [1, 3, 7, 21, 37].into_iter().flat_map(|m| [(m, 48), (m, 40)]) {
            for format in [GgmlDType::Q4K, GgmlDType::Q6K] {
                let k = 768;
                let (q, x) = case(format, n, k, m, 7);
                let f = Format::from_ggml(format).unwrap();
                let data = q.data().unwrap().into_owned();
                let candle = candle_product(q, &x, m, k);
                let reference = matmul(Kernel::Reference, f, &data, n, k, &x, m);
                let err = max_rel(&reference, &candle);
                assert!(err < 1e-5, "{format:?} m={m} n={n} reference vs candle: {err}");
                // Every kernel keeps the reference's float sequence: the same bits, not just close.
                for kernel in Kernel::available() {
                    assert_eq!(matmul(kernel, f, &data, n, k, &x, m), reference, "{format:?} {kernel:?} m={m} n={n}");
                }
            }
        }
    }

    #[test]
    fn a_row_gets_the_same_bits_alone_and_in_any_batch() {
        for format in [GgmlDType::Q4K, GgmlDType::Q6K] {
            let (n, k, m) = (32, 512, 37);
            let (q, x) = case(format, n, k, m, 11);
            let f = Format::from_ggml(format).unwrap();
            let data = q.data().unwrap().into_owned();
            for kernel in Kernel::available() {
                let batch = matmul(kernel, f, &data, n, k, &x, m);
                for r in 0..m {
                    let alone = matmul(kernel, f, &data, n, k, &x[r * k..(r + 1) * k], 1);
                    assert_eq!(alone, batch[r * n..(r + 1) * n], "{format:?} {kernel:?} row {r}");
                    // ...and in a batch of two, at either position.
                    let pair: Vec<f32> = x[r * k..(r + 1) * k].iter().chain(&x[..k]).copied().collect();
                    assert_eq!(matmul(kernel, f, &data, n, k, &pair, 2)[..n], alone[..]);
                }
            }
        }
    }

    /// candle's AMX kernels (Q4_K, 32 rows and more) configure a thread's tiles once and expect
    /// that to last; ours run on the same threads in between and must leave it as they found it:
    /// the first version released the tiles, and candle's next product died of SIGILL.
    #[test]
    fn candles_tile_products_still_work_after_ours() {
        if !Kernel::available().contains(&Kernel::Amx) {
            eprintln!("this CPU has no AMX: nothing to check");
            return;
        }
        let (n, k, m) = (64, 512, 40);
        let (q, x) = case(GgmlDType::Q4K, n, k, m, 31);
        let data = q.data().unwrap().into_owned();
        let (q2, _) = case(GgmlDType::Q4K, n, k, m, 31);
        let before = candle_product(q, &x, m, k);
        for _ in 0..3 {
            let ours = matmul(Kernel::Amx, Format::Q4K, &data, n, k, &x, m);
            assert!(max_rel(&ours, &before) < 1e-5);
        }
        assert_eq!(candle_product(q2, &x, m, k), before);
    }

    #[test]
    fn a_fused_product_gives_each_matrix_its_own_bits() {
        let (k, m) = (512, 5);
        let (q4, x) = case(GgmlDType::Q4K, 48, k, m, 21);
        let (q6, _) = case(GgmlDType::Q6K, 16, k, m, 22);
        let (a, b) = (KQuantMatrix::new(Arc::new(q4)).unwrap(), KQuantMatrix::new(Arc::new(q6)).unwrap());
        let x = Tensor::from_vec(x, (m, k), &Device::Cpu).unwrap();
        let both = KQuantMatrix::forward_all(&[&a, &b, &a], &x).unwrap();
        for (y, w) in both.iter().zip([&a, &b, &a]) {
            let alone = w.forward(&x).unwrap();
            assert_eq!(y.to_vec2::<f32>().unwrap(), alone.to_vec2::<f32>().unwrap());
        }
        assert_eq!(both[1].dims(), &[m, 16]);
    }

    #[test]
    fn zero_rows_and_extreme_values_stay_finite() {
        let (q, _) = case(GgmlDType::Q6K, 16, 256, 1, 3);
        let data = q.data().unwrap().into_owned();
        let mut x = vec![0f32; 3 * 256];
        x[256] = 1e30;
        x[600] = -3.0e-30;
        for kernel in Kernel::available() {
            let y = matmul(kernel, Format::Q6K, &data, 16, 256, &x, 3);
            assert!(y[..16].iter().all(|v| *v == 0.0), "{kernel:?}");
            assert!(y.iter().all(|v| v.is_finite()), "{kernel:?}");
        }
    }
}
