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
            // and bit i of the 32-bit mask (bytes 2–5) as its fifth bit.
            let mut v = nibbles(b[6..22].try_into().unwrap());
            for (bits, v) in b[2..6].iter().zip(v.chunks_exact_mut(8)) {
                let fifth = FIFTH_BITS[*bits as usize].to_le_bytes();
                for (v, f) in v.iter_mut().zip(fifth) {
                    *v = (*v | f as i8) - 16;
                }
            }
            v
        }
        Format::Q4_0 => nibbles(b[2..18].try_into().unwrap()).map(|v| v - 8),
    };
    (d, values)
}

/// Low nibbles of 16 bytes, then their high nibbles.
fn nibbles(qs: &[u8; 16]) -> [i8; QK] {
    let mut v = [0i8; QK];
    for (j, &q) in qs.iter().enumerate() {
        v[j] = (q & 0x0F) as i8;
        v[j + 16] = (q >> 4) as i8;
    }
    v
}

/// For each byte of Q5_0's fifth bits, eight bytes holding 16 where its bit is set: a lookup
/// instead of a variable shift per value.
const FIFTH_BITS: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut i = 0;
        while i < 8 {
            if byte >> i & 1 == 1 {
                t[byte] |= 16 << (8 * i);
            }
            i += 1;
        }
        byte += 1;
    }
    t
};

/// The eight exact sums of one block's product: lane l holds values 4l to 4l + 3.
pub fn lanes(w: &[i8; QK], a: &[i8; QK]) -> [i32; 8] {
    // Written as products of i16 pairs, which compilers turn into SSE2's `pmaddwd`.
    let mut pairs = [0i32; QK / 2];
    for (j, p) in pairs.iter_mut().enumerate() {
        let (w0, w1, a0, a1) = (w[2 * j] as i16, w[2 * j + 1] as i16, a[2 * j] as i16, a[2 * j + 1] as i16);
        *p = w0 as i32 * a0 as i32 + w1 as i32 * a1 as i32;
    }
    std::array::from_fn(|l| pairs[2 * l] + pairs[2 * l + 1])
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

/// Dot products of one weight row with each activation row: each block is unpacked once for
/// all of them.
pub fn dot_rows(format: Format, w: &[u8], acts: &[&[Q8Block]], out: &mut [f32]) {
    let mut acc = [[0f32; 8]; super::MAX_ROWS];
    for (i, b) in w.chunks_exact(format.block_bytes()).enumerate() {
        let (d, values) = unpack(format, b);
        for (a, acc) in acts.iter().zip(acc.iter_mut()) {
            accumulate(acc, d * a[i].d, &lanes(&values, &a[i].qs));
        }
    }
    for (o, acc) in out.iter_mut().zip(&acc) {
        *o = reduce(acc);
    }
}
