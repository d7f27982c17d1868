//! Rounding to whole numbers in plain arithmetic, for loops over many values.
//!
//! Ponder is built for baseline x86-64 (SSE2), which has no rounding instruction: `f32::round`
//! and `f32::round_ties_even` compile to calls into the C library (`roundf`, `rintf`), one call
//! per value, and a call stops the compiler from vectorizing the loop around it. In a profile of
//! a 512-token prompt on the 1.5B model, `rintf` alone took 4.7 % of the time and the SwiGLU
//! loop that called it another 9 %. These give the same results with a conversion and a few
//! comparisons, which vectorize.

/// `x.round_ties_even()` for `|x| < 2^22`: adding 1.5 · 2^23 leaves no fraction bits, so the
/// sum is rounded to a whole number by the FPU's own rounding (to nearest, ties to even), and
/// subtracting it again is exact.
#[inline(always)]
pub fn ties_even_small(x: f32) -> f32 {
    const SHIFT: f32 = 12_582_912.0; // 1.5 · 2^23
    (x + SHIFT) - SHIFT
}

/// `x.round()` (halves away from zero) for any `x` whose result is then clamped into
/// `-2^30..2^30`, as quantization does: NaN gives 0 (which `as i8` gives for NaN too).
#[inline(always)]
pub fn half_away(x: f32) -> f32 {
    // `as i32` truncates (and saturates), which SSE2 does in one instruction; below 2^23 the
    // fraction `x - t` is exact, and above it every f32 is whole, so `f` is 0.
    let t = x as i32 as f32;
    let f = x - t;
    t + f32::from(u8::from(f >= 0.5)) - f32::from(u8::from(f <= -0.5))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_as_the_standard_library() {
        let mut xs: Vec<f32> = vec![0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997, 126.5, -127.5];
        xs.extend((-300_000..=300_000).map(|i| i as f32 * 0.000_731));
        xs.extend((-2000..=2000).map(|i| i as f32 * 0.25));
        for x in xs {
            assert_eq!(ties_even_small(x), x.round_ties_even(), "ties to even, {x}");
            assert_eq!(half_away(x), x.round(), "halves away, {x}");
        }
        for x in [1e7f32, -1e7, 8_388_609.0, 3e9, -3e9, f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
            let clamp = |v: f32| v.clamp(-128.0, 127.0) as i8;
            assert_eq!(clamp(half_away(x)), clamp(x.round()), "clamped, {x}");
        }
    }
}
