//! Plain-Rust dot products over GGUF K-quant blocks: the definition the SIMD kernels are tested
//! against, and the fallback on CPUs without AVX2. Layouts follow ggml's `block_q4_K` and
//! `block_q6_K`. Each super-block's sums are exact integers; the float part is fixed: each
//! super-block's value is added to one of two partial sums (even and odd blocks, so the adds
//! do not wait on each other), which are added at the end. Every kernel keeps exactly this
//! sequence, so all of them return the same bits.

use super::{f16_at, scale_min_k4, Q4K_BYTES, Q6K_BYTES, Q8K, QK_K};

/// Dot products of one Q4_K weight row with each activation row: each block is unpacked once
/// for all of them.
pub fn dot_q4k(w: &[u8], acts: &[&[Q8K]], out: &mut [f32]) {
    let mut sums = [[0f32; 2]; super::Kernel::MAX_ROWS];
    for (i, b) in w.chunks_exact(Q4K_BYTES).enumerate() {
        let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
        let scales: &[u8; 12] = b[4..16].try_into().unwrap();
        let qs = &b[16..144];
        // Run j of 32 values: the low nibbles of bytes 32(j/2).. for even j, the high for odd.
        let mut q = [0u8; QK_K];
        for (j, run) in q.chunks_exact_mut(64).enumerate() {
            for l in 0..32 {
                run[l] = qs[32 * j + l] & 0x0F;
                run[l + 32] = qs[32 * j + l] >> 4;
            }
        }
        let sc_m: [(u8, u8); 8] = std::array::from_fn(|j| scale_min_k4(j, scales));
        for (a, sum) in acts.iter().zip(sums.iter_mut()) {
            let a = &a[i];
            let (mut isum, mut msum) = (0i32, 0i32);
            for (j, &(sc, m)) in sc_m.iter().enumerate() {
                let run = &q[32 * j..32 * j + 32];
                let s: i32 = run.iter().zip(&a.qs[32 * j..32 * j + 32]).map(|(&q, &x)| q as i16 as i32 * x as i16 as i32).sum();
                isum += sc as i32 * s;
                msum += m as i32 * (a.bsums[2 * j] as i32 + a.bsums[2 * j + 1] as i32);
            }
            sum[i % 2] += (msum as f32).mul_add(-dmin * a.d, isum as f32 * (d * a.d));
        }
    }
    for (o, s) in out.iter_mut().zip(&sums) {
        *o = s[0] + s[1];
    }
}

/// Dot products of one Q6_K weight row with each activation row: each block is unpacked once
/// for all of them.
pub fn dot_q6k(w: &[u8], acts: &[&[Q8K]], out: &mut [f32]) {
    let mut sums = [[0f32; 2]; super::Kernel::MAX_ROWS];
    for (bi, b) in w.chunks_exact(Q6K_BYTES).enumerate() {
        let (ql, qh) = (&b[0..128], &b[128..192]);
        let scales = &b[192..208];
        let d = f16_at(b, 208);
        // ggml's order: halves of 128 values; within one, four runs of 32 values that take
        // their low bits from ql (low then high nibbles) and two high bits from qh. Unpacked
        // first, in fixed loops a compiler can vectorise.
        let mut q = [0i8; QK_K];
        for (n, half) in q.chunks_exact_mut(128).enumerate() {
            let (ql, qh) = (&ql[64 * n..64 * n + 64], &qh[32 * n..32 * n + 32]);
            for l in 0..32 {
                let h = qh[l];
                half[l] = ((ql[l] & 0x0F) | ((h & 3) << 4)) as i8 - 32;
                half[l + 32] = ((ql[l + 32] & 0x0F) | (((h >> 2) & 3) << 4)) as i8 - 32;
                half[l + 64] = ((ql[l] >> 4) | (((h >> 4) & 3) << 4)) as i8 - 32;
                half[l + 96] = ((ql[l + 32] >> 4) | ((h >> 6) << 4)) as i8 - 32;
            }
        }
        for (a, sum) in acts.iter().zip(sums.iter_mut()) {
            let a = &a[bi];
            let mut isum = 0i32;
            for ((q, x), &sc) in q.chunks_exact(16).zip(a.qs.chunks_exact(16)).zip(scales) {
                let s: i32 = q.iter().zip(x).map(|(&q, &x)| q as i16 as i32 * x as i16 as i32).sum();
                isum += sc as i8 as i32 * s;
            }
            sum[bi % 2] += isum as f32 * (d * a.d);
        }
    }
    for (o, s) in out.iter_mut().zip(&sums) {
        *o = s[0] + s[1];
    }
}
