//! The layer's element-wise steps (RMS norm, SwiGLU's `silu(gate) · up`) in plain code over f32
//! rows, spread over candle's threads when a step holds enough of them.
//!
//! Done as candle tensor operations they took a fifth of prompt time: `silu` called the C
//! library's `expf` once per value, one value at a time, and every operation allocated its
//! result and went through the thread pool, even for the single row of a decoding step. Here
//! each value's arithmetic is fixed (no sum depends on how the rows are split), so a row gets
//! the same bits whatever else is in the step.

use crate::parallel::{self, Disjoint};
use crate::tensor_values::with_values;
use candle_core::{Device, Result, Tensor};

/// Values below this many go on the calling thread: handing them to the pool costs more.
const PARALLEL_FROM: usize = 1 << 15;

/// `rows` rows of `width` values, each filled by `f(row index, row)`, in parallel when large.
/// `f` writes every value of its row: the rows start uninitialized (see [`Disjoint::spare`]).
///
/// # Safety
/// `f` writes each value of the row it is given.
unsafe fn rows_written(rows: usize, width: usize, f: impl Fn(usize, &mut [f32]) + Sync) -> Vec<f32> {
    let (n, mut out) = (rows * width, Vec::new());
    let dst = Disjoint::spare(&mut out, n);
    parallel::for_chunks_when(n >= PARALLEL_FROM, rows, |range| {
        for i in range {
            // SAFETY: each row index is handed to exactly one task.
            f(i, unsafe { dst.slice(i * width..(i + 1) * width) });
        }
    });
    // SAFETY: every row was written in full (the caller's promise), inside the room `spare` reserved.
    unsafe { out.set_len(n) };
    out
}

/// RMS norm of each row of `x` (`(rows, width)`), scaled by `weight`.
pub fn rms_norm(x: &Tensor, weight: &[f32], eps: f32) -> Result<Tensor> {
    let (rows, width) = x.dims2()?;
    if weight.len() != width {
        candle_core::bail!("rms_norm of {width} values with {} weights", weight.len());
    }
    let out = with_values(x, |xs| {
        // SAFETY: `row`, `xr` and `weight` are all `width` long, so the loop writes every value.
        unsafe {
            rows_written(rows, width, |i, row| {
                let xr = &xs[i * width..(i + 1) * width];
                let scale = 1.0 / (sum_of_squares(xr) / width as f32 + eps).sqrt();
                for ((o, &v), &w) in row.iter_mut().zip(xr).zip(weight) {
                    *o = v * scale * w;
                }
            })
        }
    })?;
    Tensor::from_vec(out, (rows, width), &Device::Cpu)
}

/// `silu(gate) · up`, value by value, for two tensors of the same shape.
pub fn silu_mul(gate: &Tensor, up: &Tensor) -> Result<Tensor> {
    let shape = gate.shape().clone();
    if up.shape() != &shape {
        candle_core::bail!("silu_mul of {:?} and {:?}", gate.shape(), up.shape());
    }
    let n = shape.elem_count();
    // Rows of 1024 values: the split only chooses who computes what.
    let width = if n.is_multiple_of(1024) { 1024 } else { n.max(1) };
    let out = with_values(gate, |g| {
        with_values(up, |u| {
            // SAFETY: `row`, `g` and `u` are all `width` long, so the loop writes every value.
            unsafe {
                rows_written(n / width, width, |i, row| {
                    silu_mul_row(&g[i * width..(i + 1) * width], &u[i * width..(i + 1) * width], row);
                })
            }
        })
    })??;
    Tensor::from_vec(out, shape, &Device::Cpu)
}

/// `out = silu(g) · u` over one row. The crate is built for baseline x86-64 (SSE2), where this
/// loop runs four values at a time with separate multiplies and adds: on a CPU with AVX-512 or
/// AVX2 the same code is compiled again for it, sixteen or eight at a time. Rust never fuses a
/// multiply and an add on its own, so all give the same bits.
fn silu_mul_row(g: &[f32], u: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    match crate::kquants::Kernel::chosen() {
        // SAFETY: `chosen` picked AVX-512 only on a CPU that has it.
        crate::kquants::Kernel::Avx512 | crate::kquants::Kernel::Amx => return unsafe { silu_mul_row_avx512(g, u, out) },
        // SAFETY: `chosen` picked AVX2 only on a CPU that has it.
        crate::kquants::Kernel::Avx2 => return unsafe { silu_mul_row_avx2(g, u, out) },
        crate::kquants::Kernel::Reference => {}
    }
    silu_mul_row_portable(g, u, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn silu_mul_row_avx512(g: &[f32], u: &[f32], out: &mut [f32]) {
    silu_mul_row_portable(g, u, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn silu_mul_row_avx2(g: &[f32], u: &[f32], out: &mut [f32]) {
    silu_mul_row_portable(g, u, out)
}

#[inline(always)]
fn silu_mul_row_portable(g: &[f32], u: &[f32], out: &mut [f32]) {
    for ((o, &g), &u) in out.iter_mut().zip(g).zip(u) {
        *o = g / (1.0 + exp(-g)) * u;
    }
}

/// `x` (`(T, heads · hd)`) laid out by head, `(heads, T, hd)`: how attention reads it.
pub fn by_head(x: &Tensor, heads: usize, hd: usize) -> Result<Vec<f32>> {
    // SAFETY: the copy writes all of `o`.
    unsafe { heads_of(x, heads, hd, |_, v, o| o.copy_from_slice(v)) }
}

/// `(heads, T, hd)` from `x` (`(T, heads · hd)`), each head row written by `f(token, x's
/// values, out)`.
///
/// # Safety
/// `f` writes every value of `out`: the rows start uninitialized.
pub(crate) unsafe fn heads_of(
    x: &Tensor,
    heads: usize,
    hd: usize,
    f: impl Fn(usize, &[f32], &mut [f32]) + Sync,
) -> Result<Vec<f32>> {
    let (t, width) = x.dims2()?;
    if width != heads * hd {
        candle_core::bail!("{t}×{width} values are not {heads} heads of {hd}");
    }
    with_values(x, |xs| {
        // SAFETY: the caller's `f` writes all of `o` (this function's contract).
        unsafe {
            rows_written(t * heads, hd, |i, o| {
                let (h, tok) = (i / t, i % t);
                f(tok, &xs[tok * width + h * hd..][..hd], o)
            })
        }
    })
}

/// Sum of squares in eight independent lanes, which the compiler turns into vector code.
fn sum_of_squares(xs: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = xs.chunks_exact(8);
    let tail: f32 = chunks.remainder().iter().map(|x| x * x).sum();
    for c in chunks {
        for l in 0..8 {
            acc[l] += c[l] * c[l];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `e^x` to within about 2 units in the last place, in arithmetic the compiler vectorizes
/// (the C library's `expf` is one call per value): `x = n·ln 2 + r` with `|r| ≤ ln 2 / 2`,
/// then a degree-7 Taylor polynomial for `e^r`, scaled by `2^n` through the exponent bits.
/// Arguments beyond f32's range saturate (to about 1e-38 below -87.3, 2e38 above 88.3); NaN
/// stays NaN.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    let x = x.clamp(-87.3, 88.3);
    let n = crate::round::ties_even_small(x * std::f32::consts::LOG2_E);
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let mut p = 1.0 / 5040.0;
    for c in [1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = p * r + c;
    }
    // 2^n from its exponent bits. `n + 127` is a whole number in 1..=255, and adding 2^23
    // puts it in the low mantissa bits, which the shift moves into the exponent field (and the
    // sum's own exponent out of the word). `n as i32` would do the same, but Rust's saturating
    // conversion does not vectorize: SwiGLU's loop went lane by lane through scalar code (3 %
    // of a prompt's time). For NaN `p` is NaN, whatever the scale.
    p * f32::from_bits((n + (127.0 + 8_388_608.0)).to_bits() << 23)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_within_a_few_ulp_of_the_c_library() {
        let mut worst = 0f64;
        for i in 0..=200_000 {
            let x = -87.0 + 175.0 * i as f32 / 200_000.0;
            let (ours, libm) = (exp(x) as f64, (x as f64).exp());
            worst = worst.max(((ours - libm) / libm).abs());
        }
        assert!(worst < 4.0 * f32::EPSILON as f64, "worst relative error {worst:e}");
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-1000.0), exp(-87.3));
        assert!(exp(-1000.0) < 1e-37);
        assert!(exp(1000.0).is_finite() && exp(1000.0) > 2e38);
        assert!(exp(f32::NAN).is_nan());
        // The scale's bits, for every exponent the clamp lets through, against the conversion
        // they replace.
        for n in -126..=128 {
            let x = n as f32 * std::f32::consts::LN_2;
            let clamped = x.clamp(-87.3, 88.3);
            let n = crate::round::ties_even_small(clamped * std::f32::consts::LOG2_E);
            let want = f32::from_bits(((n as i32 + 127) as u32) << 23);
            assert_eq!(f32::from_bits((n + (127.0 + 8_388_608.0)).to_bits() << 23).to_bits(), want.to_bits(), "2^{n}");
        }
    }

    #[test]
    fn swiglu_compiled_for_avx512_or_avx2_gives_the_portable_bits() {
        let g: Vec<f32> = (0..100_003)
            .map(|i| (i as f32 * 0.013).sin() * 40.0 - (i % 7) as f32)
            .chain([f32::NAN, 1e30, -1e30, 0.0, -0.0])
            .collect();
        let u: Vec<f32> = g.iter().enumerate().map(|(i, x)| x * 0.3 + (i % 5) as f32).collect();
        let (mut ours, mut portable) = (vec![0f32; g.len()], vec![0f32; g.len()]);
        silu_mul_row(&g, &u, &mut ours);
        silu_mul_row_portable(&g, &u, &mut portable);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&ours), bits(&portable));
        // Each compilation this CPU runs, not only the chosen one.
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2.
                unsafe { silu_mul_row_avx2(&g, &u, &mut ours) };
                assert_eq!(bits(&ours), bits(&portable), "AVX2");
            }
            if is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F.
                unsafe { silu_mul_row_avx512(&g, &u, &mut ours) };
                assert_eq!(bits(&ours), bits(&portable), "AVX-512");
            }
        }
    }

    #[test]
    fn rows_match_candles_operations() {
        let dev = Device::Cpu;
        for rows in [1usize, 3, 40] {
            let x: Vec<f32> = (0..rows * 1536).map(|i| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0).collect();
            let x = Tensor::from_vec(x, (rows, 1536), &dev).unwrap();
            let w: Vec<f32> = (0..1536).map(|i| 0.5 + (i % 7) as f32 / 10.0).collect();
            let ours = rms_norm(&x, &w, 1e-6).unwrap();
            let theirs = candle_nn::ops::rms_norm(&x, &Tensor::new(w.as_slice(), &dev).unwrap(), 1e-6).unwrap();
            let diff = (ours - &theirs).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f32>().unwrap();
            assert!(diff < 1e-5, "rms_norm differs by {diff}");

            let up = (x.clone() * 0.7).unwrap();
            let gate = (x.clone() * 9.0).unwrap();
            let ours = silu_mul(&gate, &up).unwrap();
            let theirs = (candle_nn::ops::silu(&gate).unwrap() * &up).unwrap();
            let diff = (ours - &theirs).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f32>().unwrap();
            assert!(diff < 1e-5, "silu_mul differs by {diff}");
        }
    }

    #[test]
    fn a_row_gets_the_same_bits_alone_and_among_others() {
        let dev = Device::Cpu;
        let x: Vec<f32> = (0..64 * 1536).map(|i| ((i * 104_729) % 4001) as f32 / 400.0 - 5.0).collect();
        let all = Tensor::from_vec(x.clone(), (64, 1536), &dev).unwrap();
        let w = vec![1.25f32; 1536];
        let row = |t: Tensor, i: usize| t.get(i).unwrap().to_vec1::<f32>().unwrap();
        for i in [0usize, 17, 63] {
            let alone = Tensor::from_vec(x[i * 1536..(i + 1) * 1536].to_vec(), (1, 1536), &dev).unwrap();
            assert_eq!(row(rms_norm(&all, &w, 1e-6).unwrap(), i), row(rms_norm(&alone, &w, 1e-6).unwrap(), 0));
            assert_eq!(row(silu_mul(&all, &all).unwrap(), i), row(silu_mul(&alone, &alone).unwrap(), 0));
        }
    }
}
