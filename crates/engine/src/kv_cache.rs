//! Per-sequence KV cache: for each layer, K and V in `(kv_heads, capacity, head_dim)` buffers
//! that grow by doubling, written in place so a decode step never copies the history. Fresh
//! buffers come zeroed from the allocator, so memory is only touched as positions are written.
//!
//! Entries are stored in one of two ways ([`KvCacheType`]):
//! - **f16**, half of f32's memory (eight 4,096-token contexts of the 1.5B model take 0.9 GiB
//!   instead of 1.8);
//! - **q8_0**, llama.cpp's 8-bit blocks: each 32 values of a head's row become 32 signed bytes
//!   and one f16 scale, 34 bytes instead of 64 (those eight contexts take 0.47 GiB).
//!
//! How much 8 bits cost depends on the model's keys. The 0.5B test model's keys have a few
//! channels a hundred times larger than the rest (Qwen2's key bias), and a block's step is set by
//! its largest value, so the others lost precision: its perplexity rose by 5 to 8 %, as
//! llama.cpp's q8_0 cache raises it by 2 to 8 %. The decoder therefore divides each channel by a
//! power of two that evens the channels out before they are stored, and multiplies the queries
//! and attention's output back ([`crate::channel_scales`]): on Debian's GPL-3 the 0.5B model's
//! perplexity is then within 0.35 % of the f16 cache's, and the 1.5B's 0.2 to 0.7 % lower (GPL-3
//! and GFDL-1.3). Likely why lower: f16 stores a key channel near 450 in steps of 0.25, while
//! with the keys' slowly turning bias taken off, 8-bit blocks store the variation around it in
//! finer steps.
//! Rotating each block by a Hadamard transform before quantizing (and the queries alike) was
//! tried earlier: it moved both models' perplexity by 1 to 3 %, either way.
//!
//! Attention reads either in place ([`Rows`]), widening as it goes. Widening is exact for both
//! (an 8-bit integer times an f16 scale fits an f32), so a cache type changes what is stored,
//! never the order of the arithmetic on it.
//!
//! Values are stored a position to a row. Keys are stored in tiles of [`KEY_TILE`] positions,
//! column by column ([`Tiles`]): the sixteen keys' first values, then their second ones, and so
//! on. Attention then scores sixteen keys at once in the lanes of a register, with one fused
//! multiply-add per column and no sums across lanes (row by row, each key's dot product was
//! spread over a register's lanes, which then had to be added together: scoring ran at about
//! two thirds of the speed of the value sums, which do the same number of multiply-adds).

use half::f16;
use half::slice::HalfFloatSliceExt;
use serde::{Deserialize, Serialize};

const INITIAL_CAPACITY: usize = 64;

/// Values per 8-bit block, each block with its own scale.
pub const Q8_BLOCK: usize = 32;

/// Keys per tile (see [`Tiles`]): one AVX-512 register of f32.
pub const KEY_TILE: usize = 16;

/// How the cache stores keys and values.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KvCacheType {
    /// Half-precision floats: what the model computed, rounded to f16.
    #[default]
    #[serde(rename = "f16")]
    F16,
    /// Blocks of 32 signed bytes with an f16 scale (llama.cpp's `q8_0`): 47 % less memory.
    #[serde(rename = "q8_0")]
    Q8_0,
}

impl KvCacheType {
    pub const ALL: [KvCacheType; 2] = [KvCacheType::F16, KvCacheType::Q8_0];

    /// The name used in settings, flags and reports: `f16` or `q8_0`.
    pub fn name(self) -> &'static str {
        match self {
            KvCacheType::F16 => "f16",
            KvCacheType::Q8_0 => "q8_0",
        }
    }

    /// The type a model with heads of `hd` values gets: 8-bit blocks need whole blocks per head,
    /// so a head size that is not a multiple of 32 (no model Ponder knows has one) keeps f16.
    pub fn for_head_dim(self, hd: usize) -> KvCacheType {
        match self {
            KvCacheType::Q8_0 if !hd.is_multiple_of(Q8_BLOCK) => KvCacheType::F16,
            t => t,
        }
    }

    /// Bytes one head's row of `hd` values takes.
    pub fn row_bytes(self, hd: usize) -> usize {
        match self.for_head_dim(hd) {
            KvCacheType::F16 => hd * size_of::<f16>(),
            KvCacheType::Q8_0 => hd + hd / Q8_BLOCK * size_of::<f16>(),
        }
    }
}

impl std::fmt::Display for KvCacheType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for KvCacheType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        KvCacheType::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown KV cache type `{s}` (expected f16 or q8_0)"))
    }
}

/// One KV head's keys or values at the first positions, as stored: `len × hd` values.
#[derive(Debug, Clone, Copy)]
pub enum Rows<'a> {
    F16(&'a [f16]),
    /// `q[j·hd + c]` times `d[(j·hd + c) / 32]`.
    Q8 {
        q: &'a [i8],
        d: &'a [f16],
    },
}

/// One KV head's keys at the first `len` positions, in tiles of [`KEY_TILE`]: key `j`'s value
/// `c` is stored at [`Tiles::at`] (its 8-bit block's scale at [`Tiles::scale_at`]). `rows`
/// holds whole tiles; the positions past `len` in the last one are not keys.
#[derive(Debug, Clone, Copy)]
pub struct Tiles<'a> {
    pub rows: Rows<'a>,
    pub len: usize,
    pub hd: usize,
}

impl Tiles<'_> {
    /// Where value `c` of key `j` is stored.
    pub fn at(j: usize, c: usize, hd: usize) -> usize {
        j / KEY_TILE * KEY_TILE * hd + c * KEY_TILE + j % KEY_TILE
    }

    /// Where block `b`'s scale of key `j` is stored (8-bit blocks).
    pub fn scale_at(j: usize, b: usize, hd: usize) -> usize {
        j / KEY_TILE * KEY_TILE * (hd / Q8_BLOCK) + b * KEY_TILE + j % KEY_TILE
    }

    /// Value `c` of key `j`, widened.
    pub fn get(&self, j: usize, c: usize) -> f32 {
        let i = Self::at(j, c, self.hd);
        match self.rows {
            Rows::F16(x) => x[i].to_f32(),
            Rows::Q8 { q, d } => q[i] as f32 * d[Self::scale_at(j, c / Q8_BLOCK, self.hd)].to_f32(),
        }
    }

    /// The keys a position to a row, widened.
    pub fn widened(&self) -> Vec<f32> {
        (0..self.len).flat_map(|j| (0..self.hd).map(move |c| self.get(j, c))).collect()
    }

    /// [`Tiles::widened`] when the keys are stored as f16 (the channel scales are measured on
    /// an f16 cache); `None` for 8-bit blocks.
    pub fn f16_rows(&self) -> Option<Vec<f32>> {
        let Rows::F16(_) = self.rows else { return None };
        Some(self.widened())
    }
}

impl Rows<'_> {
    /// The values widened, when they are stored as f16; `None` for 8-bit blocks.
    pub fn f16_rows(&self) -> Option<Vec<f32>> {
        let Rows::F16(x) = self else { return None };
        Some(x.iter().map(|v| v.to_f32()).collect())
    }
}

/// K or V of every head of one layer.
#[derive(Debug, Clone)]
enum Buffer {
    F16(Vec<f16>),
    Q8 { q: Vec<i8>, d: Vec<f16> },
}

impl Buffer {
    fn empty(kind: KvCacheType) -> Self {
        match kind {
            KvCacheType::F16 => Buffer::F16(Vec::new()),
            KvCacheType::Q8_0 => Buffer::Q8 { q: Vec::new(), d: Vec::new() },
        }
    }

    fn kind(&self) -> KvCacheType {
        match self {
            Buffer::F16(_) => KvCacheType::F16,
            Buffer::Q8 { .. } => KvCacheType::Q8_0,
        }
    }

    /// The same rows in a buffer of `new_cap` positions per head (for tiles, `len` counts the
    /// last tile whole).
    fn grow(&mut self, heads: usize, hd: usize, old_cap: usize, new_cap: usize, len: usize) {
        match self {
            Buffer::F16(x) => *x = regrow(x, heads, hd, old_cap, new_cap, len),
            Buffer::Q8 { q, d } => {
                *q = regrow(q, heads, hd, old_cap, new_cap, len);
                *d = regrow(d, heads, hd / Q8_BLOCK, old_cap, new_cap, len);
            }
        }
    }

    /// Stores `src` (whole rows of `hd`) from value `at` on.
    fn write(&mut self, at: usize, src: &[f32]) {
        match self {
            Buffer::F16(x) => x[at..at + src.len()].convert_from_f32_slice(src),
            Buffer::Q8 { q, d } => {
                let first = at / Q8_BLOCK;
                for (b, block) in src.chunks_exact(Q8_BLOCK).enumerate() {
                    d[first + b] = quantize_block(block, &mut q[at + b * Q8_BLOCK..][..Q8_BLOCK]);
                }
            }
        }
    }

    /// Stores `src` (whole rows of `hd`) as keys `first..` of the head whose tiles start at
    /// value `base` (see [`Tiles::at`]).
    fn write_tiled(&mut self, base: usize, first: usize, hd: usize, src: &[f32]) {
        let mut halves = vec![f16::ZERO; hd];
        for (r, row) in src.chunks_exact(hd).enumerate() {
            let j = first + r;
            match self {
                Buffer::F16(x) => {
                    // Converted as a slice: half's conversion of one value checks the CPU each time.
                    halves.convert_from_f32_slice(row);
                    for (c, &v) in halves.iter().enumerate() {
                        x[base + Tiles::at(j, c, hd)] = v;
                    }
                }
                Buffer::Q8 { q, d } => {
                    for (b, block) in row.chunks_exact(Q8_BLOCK).enumerate() {
                        let mut bytes = [0i8; Q8_BLOCK];
                        d[base / Q8_BLOCK + Tiles::scale_at(j, b, hd)] = quantize_block(block, &mut bytes);
                        for (i, byte) in bytes.into_iter().enumerate() {
                            q[base + Tiles::at(j, b * Q8_BLOCK + i, hd)] = byte;
                        }
                    }
                }
            }
        }
    }

    /// `len` rows of `hd` from value `at` on.
    fn rows(&self, at: usize, len: usize, hd: usize) -> Rows<'_> {
        match self {
            Buffer::F16(x) => Rows::F16(&x[at..][..len * hd]),
            Buffer::Q8 { q, d } => Rows::Q8 { q: &q[at..][..len * hd], d: &d[at / Q8_BLOCK..][..len * hd / Q8_BLOCK] },
        }
    }
}

/// `(heads, old_cap, width)` rows, the first `len` of each head kept, as `(heads, new_cap, width)`.
fn regrow<T: Copy + Default>(old: &[T], heads: usize, width: usize, old_cap: usize, new_cap: usize, len: usize) -> Vec<T> {
    let mut fresh = vec![T::default(); heads * new_cap * width];
    for h in 0..heads {
        let (src, dst) = (h * old_cap * width, h * new_cap * width);
        fresh[dst..dst + len * width].copy_from_slice(&old[src..src + len * width]);
    }
    fresh
}

/// One block as llama.cpp's `quantize_row_q8_0` makes it: the scale maps the largest magnitude
/// to 127, and each value is rounded to the nearest step (halves away from zero).
fn quantize_block(x: &[f32], q: &mut [i8]) -> f16 {
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    for (q, &v) in q.iter_mut().zip(x) {
        *q = crate::round::half_away(v * id) as i8;
    }
    f16::from_f32(d)
}

#[derive(Debug, Clone)]
pub struct LayerCache {
    k: Buffer,
    v: Buffer,
    cap: usize,
    len: usize,
}

impl LayerCache {
    /// An empty layer storing `kind` (which must suit the model's head size, see
    /// [`KvCacheType::for_head_dim`]).
    pub fn new(kind: KvCacheType) -> Self {
        Self { k: Buffer::empty(kind), v: Buffer::empty(kind), cap: 0, len: 0 }
    }

    /// Writes `k` and `v`, each `(heads, n, hd)`, after the committed positions. The length
    /// only advances on [`SeqCache::commit`], once every layer has been appended.
    pub fn append(&mut self, heads: usize, hd: usize, k: &[f32], v: &[f32]) {
        if let Buffer::Q8 { .. } = self.k {
            assert!(hd.is_multiple_of(Q8_BLOCK), "8-bit blocks need heads of whole blocks, not {hd}");
        }
        let n = k.len() / (heads * hd);
        let need = self.len + n;
        if need > self.cap {
            // Whole tiles of keys, so that a head's tiles end where the next head's begin.
            let new_cap = need.max(self.cap * 2).max(INITIAL_CAPACITY).next_multiple_of(KEY_TILE);
            self.k.grow(heads, hd, self.cap, new_cap, self.len.next_multiple_of(KEY_TILE));
            self.v.grow(heads, hd, self.cap, new_cap, self.len);
            self.cap = new_cap;
        }
        for h in 0..heads {
            let dst = h * self.cap * hd + self.len * hd;
            self.k.write_tiled(h * self.cap * hd, self.len, hd, &k[h * n * hd..(h + 1) * n * hd]);
            self.v.write(dst, &v[h * n * hd..(h + 1) * n * hd]);
        }
    }

    /// Keys of one KV head at the first `len` positions (appended ones included), as stored:
    /// attention reads them in place.
    pub fn keys(&self, head: usize, hd: usize, len: usize) -> Tiles<'_> {
        Tiles { rows: self.k.rows(head * self.cap * hd, len.next_multiple_of(KEY_TILE), hd), len, hd }
    }

    /// Values of one KV head at the first `len` positions, `len × hd`.
    pub fn values(&self, head: usize, hd: usize, len: usize) -> Rows<'_> {
        self.v.rows(head * self.cap * hd, len, hd)
    }
}

/// The cache of one sequence across all layers.
#[derive(Debug)]
pub struct SeqCache {
    layers: Vec<LayerCache>,
    len: usize,
}

impl SeqCache {
    pub fn new(num_layers: usize, kind: KvCacheType) -> Self {
        Self { layers: (0..num_layers).map(|_| LayerCache::new(kind)).collect(), len: 0 }
    }

    /// How the entries are stored (every layer alike; f16 for a model without layers).
    pub fn kind(&self) -> KvCacheType {
        self.layers.first().map_or(KvCacheType::F16, |l| l.k.kind())
    }

    /// Tokens whose keys and values are cached.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn layer(&self, i: usize) -> &LayerCache {
        &self.layers[i]
    }

    pub fn layer_mut(&mut self, i: usize) -> &mut LayerCache {
        &mut self.layers[i]
    }

    /// Counts `n` more positions as cached, once every layer has appended them.
    pub fn commit(&mut self, n: usize) {
        self.len += n;
        for l in &mut self.layers {
            l.len = self.len;
        }
    }

    /// Forgets every position from `len` on (drafted tokens that were not taken); the next
    /// append writes over them.
    pub(crate) fn truncate(&mut self, len: usize) {
        assert!(len <= self.len, "truncating {} cached positions to {len}", self.len);
        self.len = len;
        for l in &mut self.layers {
            l.len = len;
        }
    }

    /// An independent copy, for `n` samples that share one prompt prefill.
    pub fn fork(&self) -> Self {
        Self { layers: self.layers.clone(), len: self.len }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dequantized(rows: Rows) -> Vec<f32> {
        match rows {
            Rows::F16(x) => x.iter().map(|v| v.to_f32()).collect(),
            Rows::Q8 { q, d } => q.iter().enumerate().map(|(i, &q)| q as f32 * d[i / Q8_BLOCK].to_f32()).collect(),
        }
    }

    #[test]
    fn q8_blocks_keep_each_value_within_half_a_step_of_its_block() {
        let (heads, hd) = (2, 64);
        let mut cache = LayerCache::new(KvCacheType::Q8_0);
        // Rows of very different scales, a zero block, and enough rows to grow the buffers twice.
        let n = 150;
        let k: Vec<f32> = (0..heads * n * hd).map(|i| ((i * 7919) % 2003) as f32 / 1000.0 - 1.0).collect();
        let mut v: Vec<f32> = k.iter().enumerate().map(|(i, x)| x * 10f32.powi((i / 32 % 5) as i32 - 2)).collect();
        v[..Q8_BLOCK].fill(0.0);
        for (a, b) in [(0, 70), (70, 71), (71, n)] {
            let part = |x: &[f32]| (0..heads).flat_map(|h| x[(h * n + a) * hd..(h * n + b) * hd].to_vec()).collect::<Vec<_>>();
            cache.append(heads, hd, &part(&k), &part(&v));
            cache.len = b;
        }
        for h in 0..heads {
            for (got, src) in [(cache.keys(h, hd, n).widened(), &k), (dequantized(cache.values(h, hd, n)), &v)] {
                let want = &src[h * n * hd..(h + 1) * n * hd];
                for (block, (g, w)) in got.chunks(Q8_BLOCK).zip(want.chunks(Q8_BLOCK)).enumerate() {
                    let amax = w.iter().fold(0f32, |m, x| m.max(x.abs()));
                    for (g, w) in g.iter().zip(w) {
                        // Half a step of amax/127, plus the f16 rounding of the scale.
                        assert!((g - w).abs() <= amax / 127.0 * 0.5 + amax * 1e-3, "head {h} block {block}: {g} vs {w}");
                    }
                }
            }
        }
        assert!(dequantized(cache.values(0, hd, 1))[..Q8_BLOCK].iter().all(|&x| x == 0.0));
    }

    #[test]
    fn a_q8_row_takes_34_bytes_per_32_values_and_odd_heads_keep_f16() {
        assert_eq!(KvCacheType::Q8_0.row_bytes(128), 136);
        assert_eq!(KvCacheType::F16.row_bytes(128), 256);
        assert_eq!(KvCacheType::Q8_0.for_head_dim(80), KvCacheType::F16);
        assert_eq!("Q8_0".parse::<KvCacheType>(), Ok(KvCacheType::Q8_0));
        assert!("q4".parse::<KvCacheType>().unwrap_err().contains("f16 or q8_0"));
    }
}
