//! Products with the 32-value block formats on real weights of the 0.5B test model, whose
//! 896-wide rows its file stores as Q5_0 and Q8_0: Ponder's kernels (weights packed at load)
//! against candle's, at the row counts the engine sees (one decoding sequence, batches of 4 and
//! 16, a prompt chunk of 64), and the Q8_0 output projection, read once per token.
//!
//! `cargo bench -p ponder-engine --bench legacy_quants` (2 threads, as `ponder bench`).

use candle_core::quantized::{gguf_file, QMatMul};
use candle_core::{Device, Module, Tensor};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ponder_engine::legacy_quants::LegacyMatrix;
use std::sync::Arc;

fn input(m: usize, k: usize) -> Tensor {
    let x: Vec<f32> = (0..m * k).map(|i| (i * 7919 % 1000) as f32 / 500.0 - 1.0).collect();
    Tensor::from_vec(x, (m, k), &Device::Cpu).unwrap()
}

fn products(c: &mut Criterion) {
    ponder_testkit::threads();
    let path = ponder_testkit::small_model();
    let mut f = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let ct = gguf_file::Content::read(&mut f).unwrap();
    for name in ["blk.0.ffn_up.weight", "blk.0.attn_v.weight"] {
        let q = Arc::new(ct.tensor(&mut f, name, &Device::Cpu).unwrap());
        let (n, k) = q.shape().dims2().unwrap();
        let ours = LegacyMatrix::new(q.clone()).unwrap();
        let candle = QMatMul::from_arc(q.clone()).unwrap();
        let mut g = c.benchmark_group(format!("{name} {:?} {n}x{k}", q.dtype()));
        g.sample_size(20);
        for m in [1usize, 4, 16, 64] {
            let x = input(m, k);
            g.throughput(Throughput::Elements((m * n * k) as u64));
            g.bench_with_input(BenchmarkId::new("ponder", m), &x, |b, x| b.iter(|| ours.forward(x).unwrap()));
            g.bench_with_input(BenchmarkId::new("candle", m), &x, |b, x| b.iter(|| candle.forward(x).unwrap()));
        }
        g.finish();
    }
    // The output projection (Q8_0, 144 MB): more than the caches hold, so one row asks for the
    // memory's bandwidth.
    let table = Arc::new(ct.tensor(&mut f, "output.weight", &Device::Cpu).unwrap());
    let ours = LegacyMatrix::new(table.clone()).unwrap();
    let candle = QMatMul::from_arc(table.clone()).unwrap();
    let x = input(1, 896);
    let mut g = c.benchmark_group(format!("output projection {:?}, one row", table.dtype()));
    g.sample_size(10);
    g.throughput(Throughput::Bytes(table.storage_size_in_bytes() as u64));
    g.bench_function("ponder", |b| b.iter(|| ours.forward(&x).unwrap()));
    g.bench_function("candle", |b| b.iter(|| candle.forward(&x).unwrap()));
    g.finish();
}

criterion_group!(benches, products);
criterion_main!(benches);
