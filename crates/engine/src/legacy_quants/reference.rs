//! Plain-Rust dot products over 32-value blocks: the definition the SIMD kernels are tested
//! against, and the fallback on CPUs without AVX2. Layouts follow ggml's `block_q8_0`,
//! `block_q5_0` and `block_q4_0`.

use super::{Format, Q8Block, QK};

/// A weight block's scale and its 32 values as signed integers.
pub fn unpack(format: Format, b: &[u8]) -> (f32, [i8; QK]) {
    let d = half::f16::from_le_bytes([b[0], b[1]]).to_f32();
    let values = match format {
        Format::Q8_0 => std::array::from_fn(|i| b[2 + i] as i8),
        Format::Q5_0 => {
            // Value i takes the low nibble of byte i (the high nibble of byte i - 16 from 16 on)
            // and bit i of the 32-bit mask as its fifth bit.
            let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
            let qs = &b[6..22];
            std::array::from_fn(|i| {
                let low = if i < 16 { qs[i] & 0x0F } else { qs[i - 16] >> 4 };
                (low | (((qh >> i) & 1) as u8) << 4) as i8 - 16
            })
        }
        Format::Q4_0 => {
            let qs = &b[2..18];
            std::array::from_fn(|i| (if i < 16 { qs[i] & 0x0F } else { qs[i - 16] >> 4 }) as i8 - 8)
        }
    };
    (d, values)
}

/// The eight exact sums of one block's product: lane l holds values 4l to 4l + 3.
pub fn lanes(w: &[i8; QK], a: &[i8; QK]) -> [i32; 8] {
    std::array::from_fn(|l| (4 * l..4 * l + 4).map(|i| w[i] as i32 * a[i] as i32).sum())
}

/// The float part every kernel shares: a lane accumulator gains scale × sum (multiply, then
/// add), and the lanes are added as AVX's halving tree adds them.
pub fn accumulate(acc: &mut [f32; 8], scale: f32, sums: &[i32; 8]) {
    for (a, &s) in acc.iter_mut().zip(sums) {
        *a += scale * s as f32;
    }
}

pub fn reduce(acc: &[f32; 8]) -> f32 {
    let s: [f32; 4] = std::array::from_fn(|i| acc[i] + acc[i + 4]);
    (s[0] + s[2]) + (s[1] + s[3])
}

/// Dot product of one weight row with one activation row.
pub fn dot(format: Format, w: &[u8], a: &[Q8Block]) -> f32 {
    let mut acc = [0f32; 8];
    for (b, a) in w.chunks_exact(format.block_bytes()).zip(a) {
        let (d, values) = unpack(format, b);
        accumulate(&mut acc, d * a.d, &lanes(&values, &a.qs));
    }
    reduce(&acc)
}
