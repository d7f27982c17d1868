//! Attention of one decoding token over its sequence's cache, computed straight from the cache
//! buffers. A decode step has one query row per sequence; done through tensor operations, each
//! sequence and layer would cost a dozen small allocations and thread hand-offs, which for a
//! batch of eight sequences outweighed the arithmetic.

use crate::kv_cache::LayerCache;

/// `q` is `(heads, hd)`; the result is `(heads · hd)`, heads in order. Query heads that share
/// a KV head (grouped-query attention) read the same keys and values.
pub fn decode(q: &[f32], cache: &LayerCache, len: usize, heads: usize, kv_heads: usize, hd: usize) -> Vec<f32> {
    let rep = heads / kv_heads;
    let scale = 1.0 / (hd as f32).sqrt();
    let mut out = vec![0f32; heads * hd];
    let mut scores = vec![0f32; len];
    let (mut keys, mut values) = (Vec::new(), Vec::new());
    for h in 0..heads {
        if h % rep == 0 {
            cache.keys_into(h / rep, hd, len, &mut keys);
            cache.values_into(h / rep, hd, len, &mut values);
        }
        let qh = &q[h * hd..(h + 1) * hd];
        let mut max = f32::NEG_INFINITY;
        for (s, k) in scores.iter_mut().zip(keys.chunks_exact(hd)) {
            *s = dot(qh, k) * scale;
            max = max.max(*s);
        }
        let mut sum = 0f32;
        for s in scores.iter_mut() {
            *s = (*s - max).exp();
            sum += *s;
        }
        let o = &mut out[h * hd..(h + 1) * hd];
        for (p, v) in scores.iter().zip(values.chunks_exact(hd)) {
            let p = p / sum;
            for (o, v) in o.iter_mut().zip(v) {
                *o += p * v;
            }
        }
    }
    out
}

/// Dot product in eight independent lanes, which the compiler turns into vector code.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    acc.iter().sum::<f32>() + tail
}
