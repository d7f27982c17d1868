//! Per-sequence KV cache: for each layer, K and V of shape `(kv_heads, len, head_dim)` in a
//! buffer that grows by doubling, written in place so a decode step never copies the history.

use candle_core::{Result, Tensor};

const INITIAL_CAPACITY: usize = 64;

#[derive(Debug, Default)]
pub struct LayerCache {
    k: Option<Tensor>,
    v: Option<Tensor>,
    len: usize,
}

impl LayerCache {
    /// Appends `(kv_heads, n, hd)` keys and values; returns views of the whole history.
    /// The length only advances on [`SeqCache::commit`], once every layer has been appended.
    pub fn append(&mut self, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let n = k.dim(1)?;
        let need = self.len + n;
        let cap = self.k.as_ref().map(|t| t.dim(1)).transpose()?.unwrap_or(0);
        if need > cap {
            let new_cap = need.max(cap * 2).max(INITIAL_CAPACITY);
            let grow = |old: &Option<Tensor>, src: &Tensor| -> Result<Tensor> {
                let (h, _, d) = src.dims3()?;
                let fresh = Tensor::zeros((h, new_cap, d), src.dtype(), src.device())?;
                if let Some(old) = old {
                    fresh.slice_set(&old.narrow(1, 0, self.len)?, 1, 0)?;
                }
                Ok(fresh)
            };
            self.k = Some(grow(&self.k, k)?);
            self.v = Some(grow(&self.v, v)?);
        }
        let (kc, vc) = (self.k.as_ref().unwrap(), self.v.as_ref().unwrap());
        kc.slice_set(&k.contiguous()?, 1, self.len)?;
        vc.slice_set(&v.contiguous()?, 1, self.len)?;
        Ok((kc.narrow(1, 0, need)?, vc.narrow(1, 0, need)?))
    }

    fn deep_copy(&self) -> Result<Self> {
        let copy = |t: &Option<Tensor>| -> Result<Option<Tensor>> {
            t.as_ref().map(|t| t.copy()).transpose()
        };
        Ok(Self { k: copy(&self.k)?, v: copy(&self.v)?, len: self.len })
    }

    fn capacity(&self) -> usize {
        self.k.as_ref().map(|t| t.dim(1).unwrap_or(0)).unwrap_or(0)
    }
}

/// The cache of one sequence across all layers.
#[derive(Debug)]
pub struct SeqCache {
    layers: Vec<LayerCache>,
    len: usize,
}

impl SeqCache {
    pub fn new(num_layers: usize) -> Self {
        Self { layers: (0..num_layers).map(|_| LayerCache::default()).collect(), len: 0 }
    }

    /// Tokens whose keys and values are cached.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn layer_mut(&mut self, i: usize) -> &mut LayerCache {
        &mut self.layers[i]
    }

    pub(crate) fn commit(&mut self, n: usize) {
        self.len += n;
        for l in &mut self.layers {
            l.len = self.len;
        }
    }

    /// An independent copy, for `n` samples that share one prompt prefill.
    pub fn fork(&self) -> Result<Self> {
        Ok(Self {
            layers: self.layers.iter().map(|l| l.deep_copy()).collect::<Result<_>>()?,
            len: self.len,
        })
    }

    /// Token slots allocated (at least `len`), for memory accounting.
    pub fn capacity(&self) -> usize {
        self.layers.first().map(|l| l.capacity()).unwrap_or(0)
    }
}
