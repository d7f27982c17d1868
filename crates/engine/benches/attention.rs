//! Decode attention deep into a long thought: one query row against every layer's cache in turn,
//! as one decoding step reads them, at depths 512, 4,096 and 8,192, for both cache types. The
//! 1.5B model (12 query heads over 2 KV heads of 128, 28 layers) and the 0.5B one (14 over 2 of
//! 64, 24 layers). At 8,192 the 1.5B model's f16 caches hold 229 MB, more than any cache level of
//! a desktop CPU, so the figure includes reading them from memory.
//!
//! `cargo bench -p ponder-engine --bench attention` (2 threads, as `ponder bench`).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ponder_engine::attention::{attend, Heads, Span};
use ponder_engine::kv_cache::{KvCacheType, SeqCache};

/// Each model's name, attention shape and layers.
const MODELS: [(&str, Heads, usize); 2] =
    [("1.5B", Heads { heads: 12, kv_heads: 2, hd: 128 }, 28), ("0.5B", Heads { heads: 14, kv_heads: 2, hd: 64 }, 24)];

fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919 + seed * 104_729) % 2003) as f32 / 1000.0 - 1.0).collect()
}

/// A sequence's cache of `layers` layers and `depth` positions, filled in prompt chunks of 512.
fn cache(shape: Heads, layers: usize, kind: KvCacheType, depth: usize) -> SeqCache {
    let Heads { kv_heads, hd, .. } = shape;
    let (k, v) = (values(kv_heads * 512 * hd, 1), values(kv_heads * 512 * hd, 3));
    let mut c = SeqCache::new(layers, kind);
    for _ in 0..depth / 512 {
        for l in 0..layers {
            c.layer_mut(l).append(kv_heads, hd, &k, &v);
        }
        c.commit(512);
    }
    c
}

fn decode_at_depth(c: &mut Criterion) {
    ponder_testkit::threads();
    for (model, shape, layers) in MODELS {
        let q = values(shape.heads * shape.hd, 2);
        for kind in KvCacheType::ALL {
            let mut g = c.benchmark_group(format!("decode attention, {model}, {kind}"));
            g.sample_size(10);
            for depth in [512usize, 4096, 8192] {
                let seq = cache(shape, layers, kind, depth);
                g.throughput(Throughput::Elements(depth as u64));
                g.bench_with_input(BenchmarkId::from_parameter(depth), &seq, |b, seq| {
                    b.iter(|| {
                        for l in 0..layers {
                            let span = Span { cache: seq.layer(l), past: depth - 1, first_row: 0, rows: 1 };
                            std::hint::black_box(attend(&q, 1, &[span], shape));
                        }
                    })
                });
            }
            g.finish();
        }
    }
}

criterion_group!(benches, decode_at_depth);
criterion_main!(benches);
