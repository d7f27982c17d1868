//! Matrix products over GGUF's 32-value block formats: Q8_0, Q5_0 and Q4_0, which ggml calls
//! its legacy quants.
//!
//! llama.cpp still writes them: Q8_0 models are common, and a K-quant file falls back to Q5_0
//! and Q8_0 for any tensor whose rows are not a multiple of 256 values (all but the FFN's
//! down projection in Qwen2.5 0.5B, whose hidden size is 896). candle's kernels for these
//! formats pick their SIMD at compile time, so a binary built for every x86-64 CPU would run
//! them without it. These choose AVX2 at run time, as [`crate::kquants`] does.
//!
//! As in ggml, activations are quantized to Q8_0 (32 values, one scale). Each block's product
//! is eight exact integer sums (values 4l..4l+3 for lane l), which every kernel turns into
//! floats the same way: lane l of an eight-lane accumulator gains the block's scale times its
//! sum (a multiply, then an add: no fused multiply-add, which CPUs without FMA do in software),
//! and the lanes are added in one fixed tree at the end ([`reference`]). So every kernel
//! returns the same bits, and a row's result does not depend on the rows batched with it.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
pub mod packed;
pub mod reference;

use crate::huge_pages::HugeBuffer;
use crate::kquants::Kernel;
use crate::parallel::{self, Columns};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use std::sync::Arc;

/// Values per block, in every format here.
pub const QK: usize = 32;

/// The block formats these kernels read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A f16 scale and 32 signed bytes.
    Q8_0,
    /// A f16 scale, the 32 values' fifth bits, and their low four bits; values are offset by 16.
    Q5_0,
    /// A f16 scale and 32 four-bit values offset by 8.
    Q4_0,
}

impl Format {
    pub fn from_ggml(dtype: GgmlDType) -> Option<Self> {
        match dtype {
            GgmlDType::Q8_0 => Some(Self::Q8_0),
            GgmlDType::Q5_0 => Some(Self::Q5_0),
            GgmlDType::Q4_0 => Some(Self::Q4_0),
            _ => None,
        }
    }

    pub const fn block_bytes(self) -> usize {
        match self {
            Self::Q8_0 => 34,
            Self::Q5_0 => 22,
            Self::Q4_0 => 18,
        }
    }
}

/// `Format`s as the numbers the SIMD kernels are specialised on (a const generic cannot be an
/// enum).
#[cfg(target_arch = "x86_64")]
mod format_id {
    use super::Format;

    pub const Q8_0: u8 = 0;
    pub const Q5_0: u8 = 1;
    pub const Q4_0: u8 = 2;

    pub const fn format(f: u8) -> Format {
        match f {
            Q8_0 => Format::Q8_0,
            Q5_0 => Format::Q5_0,
            _ => Format::Q4_0,
        }
    }
}

/// 32 activations as 8-bit integers with one scale (ggml's `block_q8_0`, its scale widened
/// from the f16 it is stored as).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Q8Block {
    pub d: f32,
    pub qs: [i8; QK],
}

impl Q8Block {
    /// ggml's quantization: the scale maps the largest magnitude to 127, values round half away
    /// from zero, and the scale is kept at f16 precision (as ggml stores it) for the products.
    pub fn quantize(xs: &[f32; QK]) -> Self {
        let amax = xs.iter().fold(0f32, |m, x| m.max(x.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let qs = std::array::from_fn(|i| crate::round::half_away(xs[i] * id).clamp(-127.0, 127.0) as i8);
        Self { d: half::f16::from_f32(d).to_f32(), qs }
    }

    /// A row (a multiple of 32 values) block by block.
    pub fn quantize_row(xs: &[f32]) -> Vec<Self> {
        xs.chunks_exact(QK).map(|b| Self::quantize(b.try_into().unwrap())).collect()
    }
}

/// How many activation rows one kernel call takes at most: the weights of a block are unpacked
/// once for all of them.
pub const MAX_ROWS: usize = 4;

/// Dots of one weight row (`blocks` blocks as in the file) with up to [`MAX_ROWS`] activation
/// rows. Called once per weight row, so it checks without dividing.
pub fn dot_rows(kernel: Kernel, format: Format, w: &[u8], blocks: usize, acts: &[&[Q8Block]], out: &mut [f32]) {
    assert!(acts.len() <= MAX_ROWS && acts.len() == out.len() && w.len() == blocks * format.block_bytes());
    assert!(acts.iter().all(|a| a.len() >= blocks));
    match kernel {
        Kernel::Reference => reference::dot_rows(format, w, acts, out),
        // SAFETY: `Kernel::chosen` only picks AVX2 or AVX-512 (which implies it) on a CPU that
        // has AVX2, FMA and F16C; the shapes are checked above.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 | Kernel::Avx512 | Kernel::Amx => unsafe {
            macro_rules! go {
                ($f:expr) => {
                    match acts.len() {
                        1 => avx2::dot::<1, { $f }>(w, blocks, acts, out),
                        2 => avx2::dot::<2, { $f }>(w, blocks, acts, out),
                        3 => avx2::dot::<3, { $f }>(w, blocks, acts, out),
                        4 => avx2::dot::<4, { $f }>(w, blocks, acts, out),
                        _ => {}
                    }
                };
            }
            match format {
                Format::Q8_0 => go!(format_id::Q8_0),
                Format::Q5_0 => go!(format_id::Q5_0),
                Format::Q4_0 => go!(format_id::Q4_0),
            }
        },
        #[cfg(not(target_arch = "x86_64"))]
        _ => unreachable!("only the reference kernel exists off x86-64"),
    }
}

/// The activations quantized to Q8_0, one row per input row (in parallel for many).
fn quantize_rows(xs: &[f32], k: usize, m: usize) -> Vec<Vec<Q8Block>> {
    parallel::map_when(m > 4, m, |i| Q8Block::quantize_row(&xs[i * k..(i + 1) * k]))
}

/// `(m, k)` activations times the `(n, k)` weights in `w` (GGUF blocks), transposed: an `(m, n)`
/// row-major result. Threads split the weight rows; each is read once for all `m` rows.
pub fn matmul(kernel: Kernel, format: Format, w: &[u8], n: usize, k: usize, xs: &[f32], m: usize) -> Vec<f32> {
    assert_eq!(xs.len(), m * k);
    let acts = quantize_rows(xs, k, m);
    #[cfg(target_arch = "x86_64")]
    if kernel >= Kernel::Avx512 && n.is_multiple_of(packed::ROWS) {
        assert_eq!(w.len(), n * (k / QK) * format.block_bytes(), "weight bytes do not match {n}×{k}");
        let w = packed::pack(format, w, n, k / QK);
        return matmul_packed(&[Part { format, w: &w, n }], k, &acts).remove(0);
    }
    matmul_parts(kernel, &[Part { format, w, n }], k, &acts).remove(0)
}

/// One weight matrix of a product: `n` rows of GGUF blocks.
struct Part<'a> {
    format: Format,
    w: &'a [u8],
    n: usize,
}

/// The quantized activations times each part, in one parallel pass over all the parts' rows:
/// one hand-off to the threads per product instead of one per matrix.
fn matmul_parts(kernel: Kernel, parts: &[Part], k: usize, acts: &[Vec<Q8Block>]) -> Vec<Vec<f32>> {
    let blocks = k / QK;
    for p in parts {
        assert_eq!(p.w.len(), p.n * blocks * p.format.block_bytes(), "weight bytes do not match {}×{k}", p.n);
    }
    let acts: Vec<&[Q8Block]> = acts.iter().map(|a| a.as_slice()).collect();
    // Every part's rows in one list: part `i`'s start at `starts[i]`.
    let starts: Vec<usize> = parts.iter().scan(0, |at, p| Some(std::mem::replace(at, *at + p.n))).collect();
    let total = parts.iter().map(|p| p.n).sum();
    let widths: Vec<usize> = parts.iter().map(|p| p.n).collect();
    let fill = |columns: &[Columns]| {
        parallel::for_chunks(total, |items| {
            let mut res = [0f32; MAX_ROWS];
            for item in items {
                let pi = starts.partition_point(|&s| s <= item) - 1;
                let (part, j) = (&parts[pi], item - starts[pi]);
                let row_bytes = blocks * part.format.block_bytes();
                let row = &part.w[j * row_bytes..(j + 1) * row_bytes];
                for (c, a) in acts.chunks(MAX_ROWS).enumerate() {
                    dot_rows(kernel, part.format, row, blocks, a, &mut res[..a.len()]);
                    for (l, &v) in res[..a.len()].iter().enumerate() {
                        // SAFETY: this task alone handles row `j` of part `pi`, so that column.
                        unsafe { columns[pi].set(c * MAX_ROWS + l, j, &[v]) };
                    }
                }
            }
        })
    };
    // SAFETY: the items cover every part's rows (columns of the result), each written for every activation row.
    unsafe { parallel::columns_written(acts.len(), &widths, fill) }
}

/// [`matmul_parts`] over packed matrices ([`packed::pack`]) with the AVX-512 kernels: one
/// parallel pass over every part's groups of sixteen rows.
#[cfg(target_arch = "x86_64")]
fn matmul_packed(parts: &[Part], k: usize, acts: &[Vec<Q8Block>]) -> Vec<Vec<f32>> {
    assert!(Kernel::chosen() >= Kernel::Avx512, "packed weights need the AVX-512 kernels");
    let blocks = k / QK;
    let group_bytes = |f: Format| blocks * packed::packed_bytes(f);
    assert!(parts.iter().all(|p| p.n % packed::ROWS == 0 && p.w.len() == p.n / packed::ROWS * group_bytes(p.format)));
    assert!(acts.iter().all(|a| a.len() == blocks));
    let acts: Vec<avx512::ActRow> = acts.iter().map(|a| avx512::ActRow::new(a)).collect();
    // Every part's groups in one list: part `i`'s start at `starts[i]`.
    let starts: Vec<usize> = parts.iter().scan(0, |at, p| Some(std::mem::replace(at, *at + p.n / packed::ROWS))).collect();
    let groups: usize = parts.iter().map(|p| p.n / packed::ROWS).sum();
    let widths: Vec<usize> = parts.iter().map(|p| p.n).collect();
    let fill = |columns: &[Columns]| {
        parallel::for_chunks(groups, |items| {
            for item in items {
                let pi = starts.partition_point(|&s| s <= item) - 1;
                let (part, gi) = (&parts[pi], item - starts[pi]);
                let gb = group_bytes(part.format);
                // A group's weights stay in cache while the activation rows pass over them.
                let gw = &part.w[gi * gb..(gi + 1) * gb];
                for (c, a) in acts.chunks(avx512::MAX_ROWS).enumerate() {
                    let mut res = [[0f32; 16]; avx512::MAX_ROWS];
                    // SAFETY: `chosen` picked AVX-512 for this CPU (asserted above); every activation
                    // row has `blocks` blocks, as many as the group.
                    unsafe {
                        macro_rules! go {
                            ($f:expr) => {
                                match a.len() {
                                    1 => avx512::dot::<1, { $f }>(gw, a, &mut res),
                                    _ => avx512::dot::<2, { $f }>(gw, a, &mut res),
                                }
                            };
                        }
                        match part.format {
                            Format::Q8_0 => go!(format_id::Q8_0),
                            Format::Q5_0 => go!(format_id::Q5_0),
                            Format::Q4_0 => go!(format_id::Q4_0),
                        }
                    }
                    for (r, vals) in res[..a.len()].iter().enumerate() {
                        // SAFETY: this task alone handles group `gi` of part `pi`, so these columns.
                        unsafe { columns[pi].set(c * avx512::MAX_ROWS + r, gi * packed::ROWS, vals) };
                    }
                }
            }
        })
    };
    // SAFETY: the groups cover every part's columns, and each group writes all the activation rows of its own.
    unsafe { parallel::columns_written(acts.len(), &widths, fill) }
}

/// A weight matrix of `n` rows by `k` columns in one of these formats: packed for the AVX-512
/// kernels ([`packed`], as large as the file's tensor, which is then dropped), or kept as
/// loaded for the others.
#[derive(Debug, Clone)]
pub struct LegacyMatrix {
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

impl LegacyMatrix {
    /// The matrix, if its format is one of ours and it lives in CPU memory.
    pub fn new(tensor: Arc<QTensor>) -> Option<Self> {
        let format = Format::from_ggml(tensor.dtype())?;
        let (n, k) = tensor.shape().dims2().ok()?;
        if !matches!(tensor.device(), Device::Cpu) || k % QK != 0 {
            return None;
        }
        let stored = if Kernel::chosen() >= Kernel::Avx512 && n.is_multiple_of(packed::ROWS) {
            Stored::Packed(Arc::new(packed::pack(format, &tensor.data().ok()?, n, k / QK)))
        } else {
            Stored::Rows(tensor)
        };
        Some(Self { stored, format, n, k })
    }

    /// `x (m, k)` times the transposed weights: `(m, n)`.
    pub fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        Ok(Self::forward_all(&[self], x)?.remove(0))
    }

    /// `x (m, k)` times each matrix (all `k` columns wide), quantizing `x` once and sharing one
    /// parallel pass.
    pub fn forward_all(mats: &[&Self], x: &Tensor) -> candle_core::Result<Vec<Tensor>> {
        let (m, k) = x.dims2()?;
        if let Some(w) = mats.iter().find(|w| w.k != k) {
            candle_core::bail!("matmul of {k} columns against a {}×{} weight", w.n, w.k);
        }
        let acts = crate::tensor_values::with_values(x, |xs| quantize_rows(xs, k, m))?;
        let tensor = |out: Vec<f32>, n: usize| Tensor::from_vec(out, (m, n), x.device());
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
                return matmul_packed(&parts, k, &acts).into_iter().zip(mats).map(|(o, w)| tensor(o, w.n)).collect();
            }
        }
        // Some matrices kept their rows (a row count not a multiple of 16): one at a time.
        mats.iter()
            .map(|w| {
                let out = match &w.stored {
                    Stored::Rows(t) => {
                        matmul_parts(Kernel::chosen(), &[Part { format: w.format, w: &t.data()?, n: w.n }], k, &acts).remove(0)
                    }
                    #[cfg(target_arch = "x86_64")]
                    Stored::Packed(p) => matmul_packed(&[Part { format: w.format, w: p, n: w.n }], k, &acts).remove(0),
                    #[cfg(not(target_arch = "x86_64"))]
                    Stored::Packed(_) => unreachable!("packing is for the AVX-512 kernels"),
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
                    Format::Q8_0 => GgmlDType::Q8_0,
                    Format::Q5_0 => GgmlDType::Q5_0,
                    Format::Q4_0 => GgmlDType::Q4_0,
                };
                crate::kquants::packed_rows(ids, self.n, self.k, dtype, |row| {
                    packed::unpack_row(self.format, p, self.k / QK, row)
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kquants::test_cases::{candle_product, case, max_rel};

    const FORMATS: [GgmlDType; 3] = [GgmlDType::Q8_0, GgmlDType::Q5_0, GgmlDType::Q4_0];

    #[test]
    fn activations_quantize_as_candles_q8_0() {
        let (_, x) = case(GgmlDType::Q8_0, 1, 96, 1, 1);
        let mut x = x;
        x[40..72].fill(0.0); // an all-zero block
        let theirs = QTensor::quantize(&Tensor::from_vec(x.clone(), (1, 96), &Device::Cpu).unwrap(), GgmlDType::Q8_0)
            .unwrap()
            .data()
            .unwrap()
            .into_owned();
        for (i, b) in Q8Block::quantize_row(&x).iter().enumerate() {
            let raw = &theirs[i * 34..(i + 1) * 34];
            assert_eq!(half::f16::from_le_bytes([raw[0], raw[1]]).to_f32(), b.d, "block {i}");
            assert!(b.qs.iter().zip(&raw[2..]).all(|(q, r)| *q as u8 == *r), "block {i}");
        }
    }

    #[test]
    fn every_kernel_returns_the_references_bits_close_to_candle() {
        // 896 columns: 28 blocks, as in Qwen2.5 0.5B. 48 rows are packed for AVX-512 (three
        // groups of sixteen); 24 are not, and take the AVX2 kernel there.
        for (m, n) in [(1, 48), (3, 48), (6, 24), (13, 48), (2, 24)] {
            for format in FORMATS {
                let k = 896;
                let (q, x) = case(format, n, k, m, 7);
                let f = Format::from_ggml(format).unwrap();
                let data = q.data().unwrap().into_owned();
                let candle = candle_product(q, &x, m, k);
                let reference = matmul(Kernel::Reference, f, &data, n, k, &x, m);
                let err = max_rel(&reference, &candle);
                assert!(err < 1e-5, "{format:?} m={m} reference vs candle: {err}");
                for kernel in Kernel::available() {
                    assert_eq!(matmul(kernel, f, &data, n, k, &x, m), reference, "{format:?} {kernel:?} m={m} n={n}");
                }
            }
        }
    }

    #[test]
    fn a_row_gets_the_same_bits_alone_and_in_any_batch() {
        for format in FORMATS {
            let (n, k, m) = (16, 256, 9);
            let (q, x) = case(format, n, k, m, 11);
            let f = Format::from_ggml(format).unwrap();
            let data = q.data().unwrap().into_owned();
            for kernel in Kernel::available() {
                let batch = matmul(kernel, f, &data, n, k, &x, m);
                for r in 0..m {
                    let alone = matmul(kernel, f, &data, n, k, &x[r * k..(r + 1) * k], 1);
                    assert_eq!(alone, batch[r * n..(r + 1) * n], "{format:?} {kernel:?} row {r}");
                }
            }
        }
    }

    #[test]
    fn a_shared_quantization_gives_each_matrix_its_own_bits() {
        let (k, m) = (384, 5);
        // Packed (rows a multiple of 16) and kept as loaded, on an AVX-512 CPU.
        for (n8, n5, n4) in [(16, 32, 48), (8, 24, 16)] {
            let (q8, x) = case(GgmlDType::Q8_0, n8, k, m, 21);
            let (q5, _) = case(GgmlDType::Q5_0, n5, k, m, 22);
            let (q4, _) = case(GgmlDType::Q4_0, n4, k, m, 23);
            let mats = [q8, q5, q4].map(|q| LegacyMatrix::new(Arc::new(q)).unwrap());
            let x = Tensor::from_vec(x, (m, k), &Device::Cpu).unwrap();
            let all = LegacyMatrix::forward_all(&mats.each_ref(), &x).unwrap();
            for (y, w) in all.iter().zip(&mats) {
                assert_eq!(y.to_vec2::<f32>().unwrap(), w.forward(&x).unwrap().to_vec2::<f32>().unwrap());
            }
            assert_eq!(all[1].dims(), &[m, n5]);
        }
    }

    #[test]
    fn table_rows_read_back_as_candle_dequantizes_them() {
        for format in FORMATS {
            // Packed on an AVX-512 CPU (48 rows), and kept as loaded (40).
            for n in [48, 40] {
                let (q, _) = case(format, n, 64, 1, 4);
                let ids = Tensor::new(&[3u32, 47 % n as u32, 0, 3], &Device::Cpu).unwrap();
                let theirs = q.dequantize(&Device::Cpu).unwrap().index_select(&ids, 0).unwrap();
                let table = LegacyMatrix::new(Arc::new(q)).unwrap();
                let ours = table.rows(&ids).unwrap();
                assert_eq!(ours.to_vec2::<f32>().unwrap(), theirs.to_vec2::<f32>().unwrap(), "{format:?} n={n}");
                let past = Tensor::new(&[n as u32], &Device::Cpu).unwrap();
                assert!(table.rows(&past).is_err(), "{format:?} n={n}: a row past the end");
            }
        }
    }

    #[test]
    fn zero_rows_and_extreme_values_stay_finite() {
        for format in FORMATS {
            let (q, _) = case(format, 16, 64, 1, 3);
            let data = q.data().unwrap().into_owned();
            let f = Format::from_ggml(format).unwrap();
            let mut x = vec![0f32; 3 * 64];
            x[64] = 1e6; // large, but its scale (1e6 / 127) still fits the f16 ggml keeps it in
            x[150] = -3.0e-30;
            for kernel in Kernel::available() {
                let y = matmul(kernel, f, &data, 16, 64, &x, 3);
                assert!(y[..16].iter().all(|v| *v == 0.0), "{format:?} {kernel:?}");
                assert!(y.iter().all(|v| v.is_finite()), "{format:?} {kernel:?}");
            }
        }
    }
}
