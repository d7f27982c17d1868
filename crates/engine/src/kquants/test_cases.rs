//! Random weights and activations for the kernel tests here and in [`crate::legacy_quants`].

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Tensor};
use rand::{Rng, SeedableRng};

/// A random `(n, k)` matrix quantized by candle (so the blocks are real ggml blocks), and
/// random `(m, k)` activations with a few large values, as real hidden states have.
pub fn case(format: GgmlDType, n: usize, k: usize, m: usize, seed: u64) -> (QTensor, Vec<f32>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let w: Vec<f32> = (0..n * k).map(|_| rng.random_range(-1.0f32..1.0) * rng.random_range(0.0f32..0.1)).collect();
    let q = QTensor::quantize(&Tensor::from_vec(w, (n, k), &Device::Cpu).unwrap(), format).unwrap();
    let x =
        (0..m * k).map(|i| if i % 97 == 0 { rng.random_range(-20.0f32..20.0) } else { rng.random_range(-1.0f32..1.0) }).collect();
    (q, x)
}

/// candle's product of the `(m, k)` activations with `q`, transposed: `(m, n)` row-major.
pub fn candle_product(q: QTensor, x: &[f32], m: usize, k: usize) -> Vec<f32> {
    let x = Tensor::from_vec(x.to_vec(), (m, k), &Device::Cpu).unwrap();
    QMatMul::from_qtensor(q).unwrap().forward(&x).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

/// The largest difference between `a` and `b`, relative to `b`'s largest magnitude.
pub fn max_rel(a: &[f32], b: &[f32]) -> f32 {
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-6);
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs())) / scale
}
