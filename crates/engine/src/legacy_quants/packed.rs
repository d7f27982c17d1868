//! The weights' layout for the AVX-512 kernels ([`super::avx512`]): sixteen weight rows
//! interleaved per block, so one 64-byte load holds four values of each of the sixteen rows,
//! and one `vpdpbusd` multiplies them with four broadcast activations, giving sixteen outputs
//! with no horizontal sums (as [`crate::kquants::packed`] does for the K-quants). A packed
//! matrix is exactly as large as the GGUF tensor, and its rows can be read back (for embedding
//! lookups).
//!
//! `vpdpbusd` multiplies unsigned weights by signed activations, so values are stored unsigned:
//! the file's value plus the format's offset ([`offset`]), which the kernel takes back off
//! exactly, in integers. Per block of sixteen rows `r`, quad `q` meaning values `4q..4q + 4`:
//! - Q8_0 (544 bytes): value `4q + b` of row `r`, plus 128, at `64 q + 4 r + b`; `d` as
//!   sixteen f16 at 512.
//! - Q4_0 (288 bytes): the file's `qs[4g + b]` of row `r` at `64 g + 4 r + b` (`g < 4`): its
//!   low nibble is value `4g + b`, its high nibble value `16 + 4g + b`, both already plus 8;
//!   `d` at 256.
//! - Q5_0 (352 bytes): the nibbles as Q4_0's, then the fifth bits as one 64-bit mask per quad,
//!   bit `4 r + b` of mask `q` (at `256 + 8 q`) being value `4q + b`'s: ready for a masked add
//!   of 16 to the bytes of quad `q`'s load. `d` at 320.

use super::Format;
use crate::huge_pages::HugeBuffer;
use rayon::prelude::*;

/// Weight rows per packed group.
pub const ROWS: usize = 16;

/// Bytes of one packed block of sixteen rows: sixteen of the file's blocks.
pub const fn packed_bytes(format: Format) -> usize {
    ROWS * format.block_bytes()
}

/// Where a packed block's sixteen scales start.
pub const fn scales_at(format: Format) -> usize {
    match format {
        Format::Q8_0 => 512,
        Format::Q4_0 => 256,
        Format::Q5_0 => 320,
    }
}

/// What the stored (unsigned) values exceed the format's values by.
pub const fn offset(format: Format) -> i32 {
    match format {
        Format::Q8_0 => 128,
        Format::Q5_0 => 16,
        Format::Q4_0 => 8,
    }
}

/// The `(n, k)` matrix `w` (GGUF blocks, row-major) in the packed layout; `n` must be a
/// multiple of [`ROWS`]. Groups of sixteen rows follow each other, each with its blocks in
/// order. Large matrices go on huge pages (see [`crate::huge_pages`]): every token reads them.
pub fn pack(format: Format, w: &[u8], n: usize, blocks: usize) -> HugeBuffer {
    let src = format.block_bytes();
    assert!(n.is_multiple_of(ROWS) && w.len() == n * blocks * src);
    let mut out = HugeBuffer::zeroed(w.len());
    // On every core: a model's worth of packing is a good part of its load time.
    out.par_chunks_exact_mut(blocks * packed_bytes(format)).enumerate().for_each(|(gi, group)| {
        for (i, p) in group.chunks_exact_mut(packed_bytes(format)).enumerate() {
            for r in 0..ROWS {
                let at = ((gi * ROWS + r) * blocks + i) * src;
                pack_block(format, &w[at..at + src], r, p);
            }
        }
    });
    out
}

fn pack_block(format: Format, b: &[u8], r: usize, p: &mut [u8]) {
    let scales = scales_at(format);
    p[scales + 2 * r..scales + 2 * r + 2].copy_from_slice(&b[0..2]);
    match format {
        Format::Q8_0 => {
            for (j, &v) in b[2..34].iter().enumerate() {
                // Two's complement plus 128 is the top bit flipped.
                p[64 * (j / 4) + 4 * r + j % 4] = v ^ 0x80;
            }
        }
        Format::Q4_0 => nibbles_in(&b[2..18], r, p),
        Format::Q5_0 => {
            nibbles_in(&b[6..22], r, p);
            let bits = u32::from_le_bytes(b[2..6].try_into().unwrap());
            for q in 0..8 {
                let at = 256 + 8 * q;
                let mut mask = u64::from_le_bytes(p[at..at + 8].try_into().unwrap());
                mask |= ((bits >> (4 * q)) as u64 & 0xF) << (4 * r);
                p[at..at + 8].copy_from_slice(&mask.to_le_bytes());
            }
        }
    }
}

/// Q4_0's and Q5_0's 16 bytes of nibbles for row `r`, four to a load.
fn nibbles_in(qs: &[u8], r: usize, p: &mut [u8]) {
    for g in 0..4 {
        p[64 * g + 4 * r..64 * g + 4 * r + 4].copy_from_slice(&qs[4 * g..4 * g + 4]);
    }
}

/// Row `row`'s GGUF blocks, read back from a packed matrix of `blocks` blocks per row.
pub fn unpack_row(format: Format, packed: &[u8], blocks: usize, row: usize) -> Vec<u8> {
    let (src, dst) = (format.block_bytes(), packed_bytes(format));
    let (gi, r) = (row / ROWS, row % ROWS);
    let scales = scales_at(format);
    let mut out = vec![0u8; blocks * src];
    for (i, b) in out.chunks_exact_mut(src).enumerate() {
        let p = &packed[(gi * blocks + i) * dst..(gi * blocks + i + 1) * dst];
        b[0..2].copy_from_slice(&p[scales + 2 * r..scales + 2 * r + 2]);
        let nibbles = |qs: &mut [u8]| {
            for g in 0..4 {
                qs[4 * g..4 * g + 4].copy_from_slice(&p[64 * g + 4 * r..64 * g + 4 * r + 4]);
            }
        };
        match format {
            Format::Q8_0 => {
                for j in 0..32 {
                    b[2 + j] = p[64 * (j / 4) + 4 * r + j % 4] ^ 0x80;
                }
            }
            Format::Q4_0 => nibbles(&mut b[2..18]),
            Format::Q5_0 => {
                nibbles(&mut b[6..22]);
                let mut bits = 0u32;
                for q in 0..8 {
                    let mask = u64::from_le_bytes(p[256 + 8 * q..264 + 8 * q].try_into().unwrap());
                    bits |= ((mask >> (4 * r)) as u32 & 0xF) << (4 * q);
                }
                b[2..6].copy_from_slice(&bits.to_le_bytes());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn packing_keeps_every_byte_of_every_row() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(6);
        for format in [Format::Q8_0, Format::Q5_0, Format::Q4_0] {
            let (n, blocks) = (32, 3);
            // Random bytes: every bit of a block, the fifth bits' included, must come back.
            let w: Vec<u8> = (0..n * blocks * format.block_bytes()).map(|_| rng.random()).collect();
            let packed = pack(format, &w, n, blocks);
            assert_eq!(packed.len(), w.len());
            let row_bytes = blocks * format.block_bytes();
            for row in 0..n {
                assert_eq!(
                    unpack_row(format, &packed, blocks, row),
                    w[row * row_bytes..(row + 1) * row_bytes],
                    "{format:?} row {row}"
                );
            }
        }
    }
}
