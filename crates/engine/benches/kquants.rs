//! K-quant matrix products on real weights of the 1.5B test model: Ponder's kernels (weights packed at load)
//! against candle's (which repack the weights on first use), at the row counts the engine
//! sees: one decoding sequence, batches of 4, 8 and 16, and a prompt chunk of 64.
//!
//! `cargo bench -p ponder-engine --bench kquants` (2 threads, as `ponder bench`).

use candle_core::quantized::{gguf_file, QMatMul};
use candle_core::{Device, Module, Tensor};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ponder_engine::kquants::KQuantMatrix;
use std::sync::Arc;

/// The 1.5B test model's header and file, with the engine's thread count set as `ponder bench` does.
fn open_model() -> (gguf_file::Content, std::fs::File) {
    ponder_testkit::threads();
    let path = ponder_testkit::large_model();
    let mut f = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let ct = gguf_file::Content::read(&mut f).unwrap();
    (ct, f)
}

fn products(c: &mut Criterion) {
    let (ct, mut f) = open_model();
    for name in ["blk.0.ffn_up.weight", "blk.0.ffn_down.weight"] {
        let q = Arc::new(ct.tensor(&mut f, name, &Device::Cpu).unwrap());
        let (n, k) = q.shape().dims2().unwrap();
        let ours = KQuantMatrix::new(q.clone()).unwrap();
        let candle = QMatMul::from_arc(q.clone()).unwrap();
        let mut g = c.benchmark_group(format!("{name} {:?} {n}x{k}", q.dtype()));
        g.sample_size(20);
        for m in [1usize, 4, 8, 16, 64] {
            let x: Vec<f32> = (0..m * k).map(|i| (i * 7919 % 1000) as f32 / 500.0 - 1.0).collect();
            let x = Tensor::from_vec(x, (m, k), &Device::Cpu).unwrap();
            g.throughput(Throughput::Elements((m * n * k) as u64));
            g.bench_with_input(BenchmarkId::new("ponder", m), &x, |b, x| b.iter(|| ours.forward(x).unwrap()));
            g.bench_with_input(BenchmarkId::new("candle", m), &x, |b, x| b.iter(|| candle.forward(x).unwrap()));
        }
        g.finish();
    }
}

/// Products whose weights come from memory, as in the model (more than the caches hold): the
/// up and down projections of all 28 layers in turn (216 MB of Q4_K; 190 MB of Q4_K and Q6_K),
/// for one decoding row, which asks for memory bandwidth, and for a batch of eight, where the
/// arithmetic has to overlap the loads. Then the output projection, read once per token.
fn from_memory(c: &mut Criterion) {
    let (ct, mut f) = open_model();
    let input = |m: usize, k: usize| {
        Tensor::from_vec((0..m * k).map(|i| (i * 7919 % 1000) as f32 / 500.0 - 1.0).collect::<Vec<f32>>(), (m, k), &Device::Cpu)
            .unwrap()
    };
    for name in ["ffn_up", "ffn_down"] {
        let layers: Vec<Arc<_>> =
            (0..28).map(|i| Arc::new(ct.tensor(&mut f, &format!("blk.{i}.{name}.weight"), &Device::Cpu).unwrap())).collect();
        let k = layers[0].shape().dims2().unwrap().1;
        let ours: Vec<KQuantMatrix> = layers.iter().map(|q| KQuantMatrix::new(q.clone()).unwrap()).collect();
        let candle: Vec<QMatMul> = layers.iter().map(|q| QMatMul::from_arc(q.clone()).unwrap()).collect();
        let bytes: usize = layers.iter().map(|q| q.storage_size_in_bytes()).sum();
        for (m, rows) in [(1, "one row"), (8, "8 rows")] {
            let x = input(m, k);
            let mut g = c.benchmark_group(format!("{name} of 28 layers, {rows}"));
            g.sample_size(20);
            g.throughput(Throughput::Bytes(bytes as u64));
            g.bench_function("ponder", |b| {
                b.iter(|| ours.iter().for_each(|w| drop(std::hint::black_box(w.forward(&x).unwrap()))))
            });
            g.bench_function("candle", |b| {
                b.iter(|| candle.iter().for_each(|w| drop(std::hint::black_box(w.forward(&x).unwrap()))))
            });
            g.finish();
        }
    }
    // The output projection: the largest matrix (Q6_K, 191 MB, in the test model; the
    // embedding table where the two are tied).
    let table = Arc::new(
        ct.tensor(&mut f, "output.weight", &Device::Cpu)
            .or_else(|_| ct.tensor(&mut f, "token_embd.weight", &Device::Cpu))
            .unwrap(),
    );
    let ours = KQuantMatrix::new(table.clone()).unwrap();
    let candle = QMatMul::from_arc(table.clone()).unwrap();
    let x = input(1, 1536);
    let mut g = c.benchmark_group(format!("output projection {:?}, one row", table.dtype()));
    g.sample_size(10);
    g.throughput(Throughput::Bytes(table.storage_size_in_bytes() as u64));
    g.bench_function("ponder", |b| b.iter(|| ours.forward(&x).unwrap()));
    g.bench_function("candle", |b| b.iter(|| candle.forward(&x).unwrap()));
    g.finish();
}

criterion_group!(benches, products, from_memory);
criterion_main!(benches);
