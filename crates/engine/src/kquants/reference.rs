//! Plain-Rust dot products over GGUF K-quant blocks: the definition the SIMD kernels are tested
//! against, and the fallback on CPUs without AVX2. Layouts follow ggml's `block_q4_K` and
//! `block_q6_K`. Each super-block's sums are exact integers; the float part is fixed: each
//! super-block's value is added to one of two partial sums (even and odd blocks, so the adds
//! do not wait on each other), which are added at the end. Every kernel keeps exactly this
//! sequence, so all of them return the same bits.

use super::{f16_at, scale_min_k4, Q4K_BYTES, Q6K_BYTES, Q8K, QK_K};

/// Dot product of one Q4_K weight row with one activation row.
pub fn dot_q4k(w: &[u8], a: &[Q8K]) -> f32 {
    let mut sum = [0f32; 2];
    for (i, (b, a)) in w.chunks_exact(Q4K_BYTES).zip(a).enumerate() {
        let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
        let scales: &[u8; 12] = b[4..16].try_into().unwrap();
        let qs = &b[16..144];
        let (mut isum, mut msum) = (0i32, 0i32);
        for j in 0..8 {
            let (sc, m) = scale_min_k4(j, scales);
            let half = &qs[32 * (j / 2)..32 * (j / 2) + 32];
            let s: i32 = (0..32)
                .map(|l| {
                    let q = if j % 2 == 0 { half[l] & 0x0F } else { half[l] >> 4 };
                    q as i32 * a.qs[32 * j + l] as i32
                })
                .sum();
            isum += sc as i32 * s;
            msum += m as i32 * (a.bsums[2 * j] as i32 + a.bsums[2 * j + 1] as i32);
        }
        sum[i % 2] += (msum as f32).mul_add(-dmin * a.d, isum as f32 * (d * a.d));
    }
    sum[0] + sum[1]
}

/// Dot product of one Q6_K weight row with one activation row.
pub fn dot_q6k(w: &[u8], a: &[Q8K]) -> f32 {
    let mut sum = [0f32; 2];
    for (bi, (b, a)) in w.chunks_exact(Q6K_BYTES).zip(a).enumerate() {
        let (ql, qh) = (&b[0..128], &b[128..192]);
        let scales = &b[192..208];
        let d = f16_at(b, 208);
        let mut isum = 0i32;
        for (i, y) in (0..QK_K).enumerate() {
            // ggml's order: halves of 128 values; within one, four runs of 32 values that take
            // their low bits from ql (low then high nibbles) and two high bits from qh.
            let (n, r) = (y / 128, y % 128);
            let (quarter, l) = (r / 32, r % 32);
            let low = ql[64 * n + l + 32 * (quarter % 2)];
            let low = if quarter < 2 { low & 0x0F } else { low >> 4 };
            let high = (qh[32 * n + l] >> (2 * quarter)) & 3;
            let q = (low | (high << 4)) as i32 - 32;
            isum += scales[i / 16] as i8 as i32 * q * a.qs[i] as i32;
        }
        sum[bi % 2] += isum as f32 * (d * a.d);
    }
    sum[0] + sum[1]
}
