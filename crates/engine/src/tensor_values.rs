//! A tensor's values as a plain slice, for the code that computes on f32 rows itself (the
//! matrix products, the element-wise steps): borrowed in place where candle's storage allows,
//! so a step's activations are not copied out before each use.

use candle_core::{CpuStorage, Result, Storage, Tensor};

/// A tensor's values in row-major order, borrowed when it is a contiguous f32 CPU tensor.
pub(crate) fn with_values<T>(t: &Tensor, f: impl FnOnce(&[f32]) -> T) -> Result<T> {
    let (storage, layout) = t.storage_and_layout();
    if let (Storage::Cpu(CpuStorage::F32(all)), Some((start, end))) = (&*storage, layout.contiguous_offsets()) {
        return Ok(f(&all[start..end]));
    }
    drop(storage);
    Ok(f(&t.flatten_all()?.to_dtype(candle_core::DType::F32)?.to_vec1::<f32>()?))
}
