//! Rotary position embeddings: the tables of angles for every position, the two ways families
//! pair a head's values, and the frequency scaling Llama 3 uses for long contexts.

use crate::rowwise::heads_of;
use candle_core::{Result, Tensor};

/// Which values of a head rotate together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    /// Value `j` with value `j + hd/2` ("rotate half"): Qwen, and Hugging Face's Llama weights.
    Halves,
    /// Value `2j` with `2j + 1`: Llama in GGUF, whose q and k weights llama.cpp's converter
    /// permuted so that this pairing computes what `Halves` does on the original weights.
    Pairs,
}

/// How a model's RoPE frequencies are stretched for contexts longer than it was trained on.
#[derive(Debug, Clone, PartialEq)]
pub enum RopeScaling {
    /// Every frequency divided by the factor.
    Linear { factor: f32 },
    /// Llama 3's: long wavelengths divided by `factor`, short ones kept, a smooth blend between.
    Llama3 { factor: f32, low_freq_factor: f32, high_freq_factor: f32, original_context: f32 },
    /// One divisor per frequency, as GGUF files of Llama 3 carry them (`rope_freqs.weight`).
    Divisors(Vec<f32>),
}

impl RopeScaling {
    /// The divisor of each of the `hd / 2` frequencies (what llama.cpp's converter writes as
    /// `rope_freqs.weight`, so that a GGUF file and its Hugging Face original agree).
    pub fn divisors(&self, hd: usize, theta: f32) -> Vec<f32> {
        let half = hd / 2;
        match self {
            RopeScaling::Linear { factor } => vec![*factor; half],
            RopeScaling::Divisors(d) => d.clone(),
            RopeScaling::Llama3 { factor, low_freq_factor, high_freq_factor, original_context } => {
                let low_wavelen = original_context / low_freq_factor;
                let high_wavelen = original_context / high_freq_factor;
                inverse_frequencies(hd, theta)
                    .into_iter()
                    .map(|f| {
                        let wavelen = 2.0 * std::f32::consts::PI / f;
                        if wavelen < high_wavelen {
                            1.0
                        } else if wavelen > low_wavelen {
                            *factor
                        } else {
                            let smooth = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
                            1.0 / ((1.0 - smooth) / factor + smooth)
                        }
                    })
                    .collect()
            }
        }
    }
}

/// `θ^(-2i/hd)` for `i < hd / 2`, as candle's tables compute them.
fn inverse_frequencies(hd: usize, theta: f32) -> Vec<f32> {
    (0..hd).step_by(2).map(|i| 1f32 / theta.powf(i as f32 / hd as f32)).collect()
}

/// Rotary position tables: for each position, `cos` and `sin` of its `hd / 2` angles.
#[derive(Debug, Clone)]
pub struct Rope {
    cos: Vec<f32>,
    sin: Vec<f32>,
    half: usize,
    style: RopeStyle,
    /// The largest angle each pair turns through within the tables' positions.
    turns: Vec<f32>,
}

impl Rope {
    /// Angles `p · θ^(-2i/hd) / divisor_i` for positions `0..ctx`, computed as candle's tables
    /// are (f32 products of the position and the inverse frequency).
    pub fn new(hd: usize, theta: f32, ctx: usize, style: RopeStyle, scaling: Option<&RopeScaling>) -> Result<Self> {
        let mut inv = inverse_frequencies(hd, theta);
        if let Some(scaling) = scaling {
            let divisors = scaling.divisors(hd, theta);
            if divisors.len() != inv.len() || divisors.iter().any(|d| !(d.is_finite() && *d > 0.0)) {
                candle_core::bail!(
                    "RoPE scaling needs {} positive divisors, not {:?}",
                    inv.len(),
                    &divisors[..divisors.len().min(4)]
                );
            }
            for (f, d) in inv.iter_mut().zip(divisors) {
                *f /= d;
            }
        }
        let angles: Vec<f32> = (0..ctx).flat_map(|p| inv.iter().map(move |f| p as f32 * f)).collect();
        Ok(Self {
            cos: angles.iter().map(|a| a.cos()).collect(),
            sin: angles.iter().map(|a| a.sin()).collect(),
            half: hd / 2,
            style,
            turns: inv.iter().map(|f| ctx.saturating_sub(1) as f32 * f).collect(),
        })
    }

    pub fn style(&self) -> RopeStyle {
        self.style
    }

    /// For each of the `hd / 2` pairs, the largest angle it turns through between the first
    /// position and the last the tables hold (radians).
    pub fn turns(&self) -> &[f32] {
        &self.turns
    }

    /// `x` (`(T, heads · hd)`, token `t` at `positions[t]`) rotated, laid out by head as
    /// [`crate::rowwise::by_head`] does.
    pub fn apply(&self, x: &Tensor, heads: usize, positions: &[u32]) -> Result<Vec<f32>> {
        let half = self.half;
        if positions.len() != x.dim(0)? {
            candle_core::bail!("rope of {} tokens at {} positions", x.dim(0)?, positions.len());
        }
        if let Some(p) = positions.iter().find(|&&p| (p as usize + 1) * half > self.cos.len()) {
            candle_core::bail!("position {p} is past the rotary tables");
        }
        let style = self.style;
        // SAFETY: a head's `2 · half` values are written, each pair once, in either style.
        unsafe {
            heads_of(x, heads, 2 * half, |tok, v, o| {
                let p = positions[tok] as usize;
                let (cos, sin) = (&self.cos[p * half..][..half], &self.sin[p * half..][..half]);
                match style {
                    RopeStyle::Halves => {
                        let (a, b) = v.split_at(half);
                        let (oa, ob) = o.split_at_mut(half);
                        for j in 0..half {
                            oa[j] = a[j] * cos[j] - b[j] * sin[j];
                            ob[j] = b[j] * cos[j] + a[j] * sin[j];
                        }
                    }
                    RopeStyle::Pairs => {
                        for j in 0..half {
                            let (a, b) = (v[2 * j], v[2 * j + 1]);
                            o[2 * j] = a * cos[j] - b * sin[j];
                            o[2 * j + 1] = b * cos[j] + a * sin[j];
                        }
                    }
                }
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Llama 3.1's published settings (factor 8, 1 and 4, 8192): the divisors follow Hugging
    /// Face's `_compute_llama3_parameters`, computed here in f64 from its definition.
    #[test]
    fn llama3_divisors_follow_the_published_rule() {
        let (hd, theta) = (128, 500_000f32);
        let scaling = RopeScaling::Llama3 { factor: 8.0, low_freq_factor: 1.0, high_freq_factor: 4.0, original_context: 8192.0 };
        let d = scaling.divisors(hd, theta);
        assert_eq!(d.len(), 64);
        for (i, &got) in d.iter().enumerate() {
            let f = 1.0 / (theta as f64).powf((2 * i) as f64 / hd as f64);
            let wavelen = 2.0 * std::f64::consts::PI / f;
            let scaled = if wavelen < 8192.0 / 4.0 {
                f
            } else if wavelen > 8192.0 {
                f / 8.0
            } else {
                let smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
                (1.0 - smooth) * f / 8.0 + smooth * f
            };
            let want = f / scaled;
            assert!((got as f64 - want).abs() < 1e-4 * want, "frequency {i}: {got} vs {want}");
        }
        assert_eq!(d[0], 1.0, "the fastest frequencies are kept");
        assert_eq!(d[63], 8.0, "the slowest are divided by the factor");
        assert!(d.iter().any(|&x| x > 1.0 && x < 8.0), "and some are blended");
    }

    /// Both pairings against candle's own (`rope` and `rope_i`), laid out by head.
    #[test]
    fn rope_matches_candles_and_lays_out_heads() {
        use crate::rowwise::by_head;
        use candle_core::Device;
        let dev = Device::Cpu;
        let (heads, hd, t) = (3, 8, 5);
        let positions = [0u32, 7, 8, 100, 3];
        let x: Vec<f32> = (0..t * heads * hd).map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0).collect();
        let x = Tensor::from_vec(x, (t, heads * hd), &dev).unwrap();
        let heads_first = x.reshape((t, heads, hd)).unwrap().transpose(0, 1).unwrap().contiguous().unwrap();
        for style in [RopeStyle::Halves, RopeStyle::Pairs] {
            let rope = Rope::new(hd, 10_000.0, 128, style, None).unwrap();
            let ours = rope.apply(&x, heads, &positions).unwrap();
            let pick = |table: &[f32]| {
                let rows: Vec<f32> = positions.iter().flat_map(|&p| table[p as usize * hd / 2..][..hd / 2].to_vec()).collect();
                Tensor::from_vec(rows, (t, hd / 2), &dev).unwrap()
            };
            let (cos, sin, x4) = (pick(&rope.cos), pick(&rope.sin), heads_first.unsqueeze(0).unwrap());
            let theirs = match style {
                RopeStyle::Halves => candle_nn::rotary_emb::rope(&x4, &cos, &sin),
                RopeStyle::Pairs => candle_nn::rotary_emb::rope_i(&x4, &cos, &sin),
            };
            assert_eq!(ours, theirs.unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap(), "{style:?}");
            assert!(rope.apply(&x, heads, &[0, 1, 2, 3, 128]).is_err());
        }
        let plain = by_head(&x, heads, hd).unwrap();
        assert_eq!(plain, heads_first.flatten_all().unwrap().to_vec1::<f32>().unwrap());
    }
}
