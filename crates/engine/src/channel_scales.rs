//! Powers of two that even out the channels of a layer's keys and values before the 8-bit cache
//! stores them, and for keys, constants taken off the channels that barely turn.
//!
//! An 8-bit block's step is set by its largest value. Some models' keys have a few channels far
//! larger than the rest: Qwen2's key bias reaches 150 to 450 in its first layers, where the other
//! channels vary by a few units, so in a block holding such a channel every other channel is
//! rounded to a few steps (the 0.5B test model's perplexity rose by 5 to 8 %). Dividing each
//! channel by its size before quantizing, and multiplying the queries (for keys) or attention's
//! output (for values) by the same number, leaves every product as it was while each block's
//! values use its whole range.
//!
//! The divisors are powers of two, so both the division and the multiplication are exact in f32:
//! only the rounding to 8 bits changes. The sizes are measured once per model, on a short fixed
//! text read with the f16 cache ([`CALIBRATION_TEXT`]): the model's parameters alone were tried
//! first (the bias plus the norm of the weight row), and they misjudged the ordinary channels'
//! sizes enough to cost the 1.5B model 1 to 3 % on short texts. RoPE rotates a pair of key
//! channels together, so a pair shares one divisor and the rotation commutes with it.
//!
//! Dividing a channel that holds a large constant (the bias) and varies by little around it still
//! spends the 8 bits on the constant. For keys the constant can go: a vector `o` taken off every
//! key lowers all of one query's scores by the same `q · o`, which softmax ignores, so attention's
//! weights are unchanged (up to rounding). RoPE rotates the bias with the position, so only pairs
//! that turn little over the whole context keep a nearly constant bias; a pair gets its mean from
//! the calibration text taken off when that at least halves its size even where its rotation
//! carries the bias furthest (see [`ChannelScales::measure`]). On Debian's GPL-3 this took the
//! 0.5B test model's 8-bit cache from +0.92 % to +0.34 % of the f16 cache's perplexity.

use crate::rope::{Rope, RopeStyle};

/// What the sizes are measured on: prose, arithmetic, an equation and code, as a chat about
/// reasoning holds, so each channel meets the kinds of token it will see.
pub const CALIBRATION_TEXT: &str = "The river runs past the old mill, where the miller grinds \
wheat into flour. If a train leaves at 3:45 pm and travels 120 km at 80 km/h, it arrives at \
5:15 pm. Solve for x: 3x^2 - 12x + 9 = 0, so x = 1 or x = 3, since (x - 1)(x - 3) = 0. \
Therefore the answer is \\boxed{3}.\n\nfn area(r: f64) -> f64 { std::f64::consts::PI * r * r }\n\
In 1887, 42 % of the 1,250 students chose Latin; how many was that? 0.42 × 1250 = 525.";

/// One divisor and one offset per channel of every KV head, `kv_heads × hd` each: a channel is
/// stored as `(x - offset) / divisor`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelScales {
    scales: Vec<f32>,
    offsets: Vec<f32>,
    hd: usize,
}

impl ChannelScales {
    /// The divisors (and for keys, offsets) for rows as an f16 cache stores them (`rows_of(head)`,
    /// one KV head's `len × hd` values widened, a position to a row; `None` for another cache
    /// type). `rope` is given for keys: their channels rotate in pairs.
    /// - A key pair's offset is its mean, where that at least halves the pair's size: the largest
    ///   distance from the mean, or if larger, how far the pair's rotation over the context
    ///   (`rope.turns()`) can carry the mean away from where it was measured.
    /// - Each channel's size is its largest magnitude (after the offset), a rotary pair's the
    ///   larger of its two, and its divisor the power of two nearest to its size over the head's
    ///   median size.
    ///
    /// `None` when every divisor is 1 and every offset 0.
    pub fn measure(kv_heads: usize, hd: usize, rope: Option<&Rope>, rows_of: impl Fn(usize) -> Option<Vec<f32>>) -> Option<Self> {
        let half = hd / 2;
        // Channel `c`'s pair, and that pair's index among RoPE's frequencies.
        let pair = |c: usize| match rope.map(Rope::style) {
            Some(RopeStyle::Halves) => ((c + half) % hd, c % half),
            Some(RopeStyle::Pairs) => (c ^ 1, c / 2),
            None => (c, 0),
        };
        let mut scales = vec![1f32; kv_heads * hd];
        let mut offsets = vec![0f32; kv_heads * hd];
        for (head, (out, offset)) in scales.chunks_exact_mut(hd).zip(offsets.chunks_exact_mut(hd)).enumerate() {
            let x = rows_of(head)?;
            let rows = x.len() / hd;
            let channel = |c: usize| x.chunks_exact(hd).map(move |row| row[c]);
            let mean: Vec<f32> = (0..hd).map(|c| channel(c).sum::<f32>() / rows.max(1) as f32).collect();
            let largest = |c: usize, from: f32| channel(c).fold(0f32, |m, v| m.max((v - from).abs()));
            let mut size: Vec<f32> = (0..hd).map(|c| largest(c, 0.0)).collect();
            if let Some(rope) = rope {
                for c in 0..hd {
                    let (p, i) = pair(c);
                    // The chord between the mean and the mean turned by the pair's largest angle.
                    let drift = mean[c].hypot(mean[p]) * 2.0 * (rope.turns()[i].min(std::f32::consts::PI) / 2.0).sin();
                    let centred = largest(c, mean[c]).max(largest(p, mean[p])).max(drift);
                    if centred <= size[c].max(size[p]) / 2.0 {
                        offset[c] = mean[c];
                    }
                }
                for c in 0..hd {
                    size[c] = largest(c, offset[c]);
                }
            }
            let size: Vec<f32> = (0..hd).map(|c| size[c].max(size[pair(c).0])).collect();
            let mut sorted = size.clone();
            sorted.sort_by(f32::total_cmp);
            let median = sorted[hd / 2];
            if !(median.is_finite() && median > 0.0) {
                continue;
            }
            for (o, s) in out.iter_mut().zip(&size) {
                // Powers of two from 2^-8 to 2^8: exact to multiply and divide by, and far from
                // f32's limits for any value a key or value takes. A channel that stayed at zero
                // gets the smallest.
                *o = (s / median).log2().round().clamp(-8.0, 8.0).exp2();
            }
        }
        let needed = scales.iter().any(|&s| s != 1.0) || offsets.iter().any(|&o| o != 0.0);
        needed.then_some(Self { scales, offsets, hd })
    }

    /// Takes their channels' offsets off rows laid out as `(kv_heads, n, hd)`, then divides them
    /// by their divisors.
    pub fn divide(&self, x: &mut [f32]) {
        let per_head = x.len() / (self.scales.len() / self.hd);
        for (head, rows) in x.chunks_exact_mut(per_head.max(1)).enumerate() {
            let scales = &self.scales[head * self.hd..][..self.hd];
            let offsets = &self.offsets[head * self.hd..][..self.hd];
            for row in rows.chunks_exact_mut(self.hd) {
                row.iter_mut().zip(scales).zip(offsets).for_each(|((x, s), o)| *x = (*x - o) / s);
            }
        }
    }

    /// Multiplies rows `first..first + rows` of queries laid out as `(heads, total, hd)` by their
    /// KV head's divisors (query head `h` reads KV head `h / (heads / kv_heads)`).
    pub fn scale_queries(&self, q: &mut [f32], heads: usize, total: usize, first: usize, rows: usize) {
        let rep = heads / (self.scales.len() / self.hd);
        for h in 0..heads {
            let scales = &self.scales[h / rep * self.hd..][..self.hd];
            for row in q[(h * total + first) * self.hd..][..rows * self.hd].chunks_exact_mut(self.hd) {
                row.iter_mut().zip(scales).for_each(|(x, s)| *x *= s);
            }
        }
    }

    /// Multiplies rows `first..first + rows` of attention's output, `(total, heads · hd)`, by
    /// their KV head's divisors.
    pub fn scale_outputs(&self, o: &mut [f32], heads: usize, first: usize, rows: usize) {
        let rep = heads / (self.scales.len() / self.hd);
        let width = heads * self.hd;
        for row in o[first * width..][..rows * width].chunks_exact_mut(width) {
            for (h, x) in row.chunks_exact_mut(self.hd).enumerate() {
                x.iter_mut().zip(&self.scales[h / rep * self.hd..][..self.hd]).for_each(|(x, s)| *x *= s);
            }
        }
    }
}

/// A layer's divisors for keys and for values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LayerScales {
    pub keys: Option<ChannelScales>,
    pub values: Option<ChannelScales>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv_cache::Rows;
    use half::f16;

    /// `kv_heads` heads of `n` rows, channel `c` of row `j` as `value(head, j, c)`, as f16.
    fn measure(
        kv_heads: usize,
        n: usize,
        hd: usize,
        rotary: Option<RopeStyle>,
        value: impl Fn(usize, usize, usize) -> f32,
    ) -> Option<ChannelScales> {
        // A context long enough that every pair turns through half a circle or more.
        measure_over(kv_heads, n, hd, rotary.map(|style| Rope::new(hd, 10_000.0, 4096, style, None).unwrap()), value)
    }

    fn measure_over(
        kv_heads: usize,
        n: usize,
        hd: usize,
        rope: Option<Rope>,
        value: impl Fn(usize, usize, usize) -> f32,
    ) -> Option<ChannelScales> {
        let rows: Vec<Vec<f16>> =
            (0..kv_heads).map(|h| (0..n * hd).map(|i| f16::from_f32(value(h, i / hd, i % hd))).collect()).collect();
        ChannelScales::measure(kv_heads, hd, rope.as_ref(), |h| Rows::F16(&rows[h]).f16_rows())
    }

    #[test]
    fn a_bias_that_barely_turns_is_taken_off_keys_and_each_querys_scores_shift_alike() {
        // Over 64 positions pair 3 (channels 3 and 7) turns 0.06 rad and pair 0 a full circle:
        // both hold a bias of 200 with variations of about 1.
        let rope = Rope::new(8, 10_000.0, 64, RopeStyle::Halves, None).unwrap();
        let value = |_: usize, j: usize, c: usize| {
            let wiggle = ((j * 7 + c * 3) as f32 * 0.9).sin();
            if c == 0 || c == 3 {
                200.0 + wiggle
            } else {
                wiggle
            }
        };
        let s = measure_over(1, 12, 8, Some(rope), value).expect("large channels");
        assert!((s.offsets[3] - 200.0).abs() < 1.0, "pair 3 barely turns: {:?}", s.offsets);
        assert!(s.offsets[7] != 0.0 && s.offsets[0] == 0.0 && s.offsets[4] == 0.0, "pair 0 turns: {:?}", s.offsets);
        assert!(s.scales[3] < s.scales[0], "the centred channel needs a smaller divisor: {:?}", s.scales);
        // Values never get offsets (attention's output would shift).
        assert!(measure_over(1, 12, 8, None, value).unwrap().offsets.iter().all(|&o| o == 0.0));

        let k: Vec<f32> = (0..10 * 8).map(|i| value(0, i / 8, i % 8) + (i as f32 * 0.37).sin()).collect();
        let q: Vec<f32> = (0..8).map(|i| (i as f32 * 0.61).cos()).collect();
        let (mut k2, mut q2) = (k.clone(), q.clone());
        s.divide(&mut k2);
        s.scale_queries(&mut q2, 1, 1, 0, 1);
        let score = |q: &[f32], k: &[f32]| q.iter().zip(k).map(|(a, b)| a * b).sum::<f32>();
        let shifts: Vec<f32> = k.chunks(8).zip(k2.chunks(8)).map(|(a, b)| score(&q, a) - score(&q2, b)).collect();
        assert!(shifts.iter().all(|d| (d - shifts[0]).abs() < 1e-3), "every key's score moves alike: {shifts:?}");
        assert!(shifts[0].abs() > 1.0, "and the bias's share is gone: {shifts:?}");
    }

    #[test]
    fn a_large_channel_gets_a_power_of_two_shared_by_its_rotary_pair() {
        // Heads of 8 channels of size 1 (the sign alternates by row); head 0's channel 1 reaches 60.
        let value = |h: usize, j: usize, c: usize| {
            if (h, c) == (0, 1) && j == 2 {
                -60.0
            } else if j.is_multiple_of(2) {
                1.0
            } else {
                -1.0
            }
        };
        let s = measure(2, 4, 8, Some(RopeStyle::Halves), value).expect("a large channel is scaled");
        assert_eq!((s.scales[1], s.scales[5]), (64.0, 64.0), "channel 1 pairs with 5");
        assert!(s.scales.iter().enumerate().all(|(c, &x)| c == 1 || c == 5 || x == 1.0));
        let s = measure(2, 4, 8, Some(RopeStyle::Pairs), value).unwrap();
        assert_eq!((s.scales[0], s.scales[1], s.scales[5]), (64.0, 64.0, 1.0), "channel 1 pairs with 0");
        let s = measure(2, 4, 8, None, value).unwrap();
        assert_eq!((s.scales[0], s.scales[1], s.scales[5]), (1.0, 64.0, 1.0), "values have no pairs");
    }

    #[test]
    fn even_channels_need_no_scales() {
        assert_eq!(measure(2, 3, 8, Some(RopeStyle::Halves), |_, j, c| (j + c % 3) as f32 * 0.4 + 1.0), None);
    }

    #[test]
    fn scaled_queries_keys_and_outputs_keep_every_product_exactly() {
        let s = measure(2, 4, 8, Some(RopeStyle::Halves), |h, _, c| {
            if (h, c) == (1, 1) {
                300.0
            } else if c == 2 {
                0.01
            } else {
                1.0
            }
        })
        .unwrap();
        let (heads, total, n) = (4, 3, 5);
        let k: Vec<f32> = (0..2 * n * 8).map(|i| (i as f32 * 0.37).sin() * 40.0).collect();
        let q: Vec<f32> = (0..heads * total * 8).map(|i| (i as f32 * 0.11).cos()).collect();
        let (mut k2, mut q2) = (k.clone(), q.clone());
        s.divide(&mut k2);
        s.scale_queries(&mut q2, heads, total, 1, 2);
        assert_eq!(q2[..8], q[..8], "rows outside the span are left alone");
        for h in 0..heads {
            let kv = h / 2;
            for t in 1..3 {
                for j in 0..n {
                    let dot = |q: &[f32], k: &[f32]| -> Vec<f32> {
                        (0..8).map(|c| q[(h * total + t) * 8 + c] * k[(kv * n + j) * 8 + c]).collect()
                    };
                    assert_eq!(dot(&q2, &k2), dot(&q, &k), "head {h} row {t} key {j}");
                }
            }
        }
        // Values: attention's output of the divided values, multiplied back, is the output.
        let out: Vec<f32> = (0..total * heads * 8).map(|i| k[i % k.len()]).collect();
        let mut divided = out.clone();
        for row in divided.chunks_exact_mut(heads * 8) {
            for (h, x) in row.chunks_exact_mut(8).enumerate() {
                x.iter_mut().zip(&s.scales[h / 2 * 8..][..8]).for_each(|(x, s)| *x /= s);
            }
        }
        s.scale_outputs(&mut divided, heads, 0, total);
        assert_eq!(divided, out);
    }
}
