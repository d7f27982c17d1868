//! What bounds the K-quant kernels: this CPU's rate of `vpdpbusd` (the AVX-512 VNNI byte product
//! the kernels are built on, 64 multiply-adds an instruction), alone and with each of the other
//! instructions the kernels issue per sub-block, one for every four products. An instruction
//! that shares the product's execution unit slows the mix; one that runs elsewhere is free.
//!
//! On this project's Zen 4 machine (figures in issue 18's notes), `vpmulld` (a sub-block's
//! scale), `vpmaddwd` (Q4_K's minimums) and `vmulps` (the float part) each take a product's
//! slot, while `vpandd`, `vpaddd`, shifts and conversions are free. That puts a ceiling on a
//! kernel below the product rate alone: Q4_K issues 320 slots per 256 products, Q6_K (with a
//! scale for every sixteen values) 328.
//!
//! `cargo bench -p ponder-engine --bench vector_ports` (one thread: the rate is per core).
//! Throughput is in multiply-adds of `vpdpbusd` per second.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

#[cfg(target_arch = "x86_64")]
mod mixes {
    use std::arch::x86_64::*;
    use std::hint::black_box;

    /// Products per loop: sixteen independent chains, more than the latency (4 cycles) needs.
    pub const PRODUCTS: usize = 16;

    /// What the loop adds to its products, four of each per sixteen products.
    #[derive(Clone, Copy, Debug)]
    pub enum Extra {
        None,
        MulLo,
        MaddWd,
        MulPs,
        AddD,
        AndD,
        TernLog,
        CvtDqPs,
    }

    pub const ALL: [Extra; 8] =
        [Extra::None, Extra::MulLo, Extra::MaddWd, Extra::MulPs, Extra::AddD, Extra::AndD, Extra::TernLog, Extra::CvtDqPs];

    pub fn supported() -> bool {
        is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512vnni")
    }

    /// `loops` rounds of [`PRODUCTS`] products and four `extra`s. Every chain starts from an
    /// opaque value: from zero, the compiler folds `x * a` and `x & a` away, and the extra looks free.
    ///
    /// # Safety
    /// The CPU passes [`supported`].
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub unsafe fn run(extra: Extra, loops: usize) -> __m512i {
        let (a, b) = (black_box(_mm512_set1_epi8(3)), black_box(_mm512_set1_epi8(5)));
        let mut acc = [black_box(b); PRODUCTS];
        let mut side = [black_box(b); 4];
        for _ in 0..loops {
            for v in acc.iter_mut() {
                *v = _mm512_dpbusd_epi32(*v, a, b);
            }
            for s in side.iter_mut() {
                *s = match extra {
                    Extra::None => *s,
                    Extra::MulLo => _mm512_mullo_epi32(*s, a),
                    Extra::MaddWd => _mm512_madd_epi16(*s, a),
                    Extra::MulPs => _mm512_castps_si512(_mm512_mul_ps(_mm512_castsi512_ps(*s), _mm512_castsi512_ps(a))),
                    Extra::AddD => _mm512_add_epi32(*s, a),
                    Extra::AndD => _mm512_and_si512(*s, a),
                    Extra::TernLog => _mm512_ternarylogic_epi32::<0xCA>(*s, a, b),
                    Extra::CvtDqPs => _mm512_castps_si512(_mm512_cvtepi32_ps(*s)),
                };
            }
            // Keeps the loop a loop of these instructions (no unrolling across rounds into a
            // different schedule).
            // SAFETY: an empty instruction string, touching no memory, stack or flags.
            unsafe { std::arch::asm!("", options(nomem, nostack, preserves_flags)) };
        }
        let sum = acc.iter().chain(&side).fold(_mm512_setzero_si512(), |s, v| _mm512_add_epi32(s, *v));
        black_box(sum)
    }
}

#[cfg(target_arch = "x86_64")]
fn ports(c: &mut Criterion) {
    if !mixes::supported() {
        eprintln!("vector_ports: this CPU has no AVX-512 VNNI; nothing to measure");
        return;
    }
    const LOOPS: usize = 100_000;
    let mut g = c.benchmark_group("vpdpbusd x16 with 4 of");
    g.sample_size(20);
    g.throughput(Throughput::Elements((LOOPS * mixes::PRODUCTS * 64) as u64));
    for extra in mixes::ALL {
        // SAFETY: `supported` checked the CPU's features above.
        g.bench_function(format!("{extra:?}"), |b| b.iter(|| unsafe { mixes::run(extra, LOOPS) }));
    }
    g.finish();
}

#[cfg(not(target_arch = "x86_64"))]
fn ports(_: &mut Criterion) {
    eprintln!("vector_ports: x86-64 only");
}

criterion_group!(benches, ports);
criterion_main!(benches);
