//! Data parallelism on candle's CPU threads: the threads that already run the model's tensor
//! operations. A second pool of busy threads (rayon's) would compete with them for the cores,
//! since candle's workers keep spinning for a while after each operation.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// A buffer that parallel tasks fill in disjoint parts.
pub struct Disjoint<'a> {
    ptr: *mut f32,
    len: usize,
    _buffer: PhantomData<&'a mut [f32]>,
}

// SAFETY: tasks only reach the buffer through `slice`, whose callers promise disjoint ranges.
unsafe impl Sync for Disjoint<'_> {}

impl<'a> Disjoint<'a> {
    pub fn new(buffer: &'a mut [f32]) -> Self {
        Self { ptr: buffer.as_mut_ptr(), len: buffer.len(), _buffer: PhantomData }
    }

    /// The first `n` values of `v`'s spare room (reserved here), not zeroed: a step's outputs
    /// are large (9 MB for the gate of a 256-token prompt chunk), and zeroing them before they
    /// were overwritten took 2–3 % of prompt time. Once tasks have written all `n`, the caller
    /// sets `v`'s length to `n`.
    pub fn spare(v: &'a mut Vec<f32>, n: usize) -> Self {
        v.clear();
        v.reserve(n);
        Self { ptr: v.as_mut_ptr(), len: n, _buffer: PhantomData }
    }

    /// # Safety
    /// No other task uses any part of `range` while the slice lives.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice(&self, range: Range<usize>) -> &mut [f32] {
        // SAFETY: the range is checked to lie inside the buffer, which lives for `'a`, and the caller guarantees no other task uses it while the slice lives.
        unsafe {
            assert!(range.start <= range.end && range.end <= self.len);
            std::slice::from_raw_parts_mut(self.ptr.add(range.start), range.len())
        }
    }
}

/// The `(m, n)` result, written by tasks that each own a range of its columns (weight rows):
/// each result goes straight to its place, with no per-task buffer to transpose afterwards.
pub struct Columns<'a> {
    out: Disjoint<'a>,
    n: usize,
}

impl<'a> Columns<'a> {
    pub fn new(out: &'a mut [f32], n: usize) -> Self {
        Self::over(Disjoint::new(out), n)
    }

    /// Rows of `n` columns in `out`.
    pub fn over(out: Disjoint<'a>, n: usize) -> Self {
        Self { out, n }
    }

    /// Writes `vs` to columns `col..col + vs.len()` of `row`.
    ///
    /// # Safety
    /// No other thread writes these columns while this task runs.
    pub unsafe fn set(&self, row: usize, col: usize, vs: &[f32]) {
        // SAFETY: the caller guarantees that no other task writes these columns; the range is checked against the buffer by `slice`.
        unsafe {
            assert!(col + vs.len() <= self.n);
            let at = row * self.n + col;
            self.out.slice(at..at + vs.len()).copy_from_slice(vs);
        }
    }
}

/// One `(rows, n)` result per entry of `widths`, filled by `fill` through [`Columns`] (usually in
/// one parallel pass over all of them), without being zeroed first (see [`Disjoint::spare`]).
///
/// # Safety
/// `fill` writes every value of every result.
pub unsafe fn columns_written(rows: usize, widths: &[usize], fill: impl FnOnce(&[Columns])) -> Vec<Vec<f32>> {
    let mut outs: Vec<Vec<f32>> = widths.iter().map(|_| Vec::new()).collect();
    let columns: Vec<Columns> =
        outs.iter_mut().zip(widths).map(|(o, &n)| Columns::over(Disjoint::spare(o, rows * n), n)).collect();
    fill(&columns);
    drop(columns);
    for (o, &n) in outs.iter_mut().zip(widths) {
        // SAFETY: the caller's `fill` wrote all `rows × n` values, inside the room `spare` reserved.
        unsafe { o.set_len(rows * n) };
    }
    outs
}

/// Runs `f` over chunks of `0..items` on candle's threads, the caller's included.
///
/// `f` must not run candle tensor operations: they would wait for the pool that is running `f`.
pub fn for_chunks(items: usize, f: impl Fn(Range<usize>) + Sync) {
    for_chunks_when(true, items, f)
}

/// [`for_chunks`] when `worth_it`, else `f(0..items)` on the calling thread: small work costs
/// less than handing it to the pool.
pub fn for_chunks_when(worth_it: bool, items: usize, f: impl Fn(Range<usize>) + Sync) {
    // Inside a task (a nested call) the pool is busy with this very call: run inline.
    if !worth_it || items == 0 || IN_TASK.get() {
        return f(0..items);
    }
    let pool = candle_core::utils::barrier_pool();
    let threads = pool.n_workers() + 1;
    let cursor = AtomicUsize::new(0);
    pool.execute(|_| {
        let _task = InTask::enter();
        while let Some(range) = grab(&cursor, items, threads) {
            f(range);
        }
    });
}

/// Marks this thread as running a task until dropped, also when `f` panics (the pool hands the
/// panic to the caller, whose later calls must still use the pool).
struct InTask;

impl InTask {
    fn enter() -> Self {
        IN_TASK.set(true);
        Self
    }
}

impl Drop for InTask {
    fn drop(&mut self) {
        IN_TASK.set(false);
    }
}

thread_local! {
    /// Whether this thread is running a [`for_chunks`] task.
    static IN_TASK: Cell<bool> = const { Cell::new(false) };
}

/// The next chunk of `0..items`, if any is left: a share of what remains (guided
/// self-scheduling). Equal chunks leave one thread idle for half a chunk on average at the end
/// of every product while the other finishes; shrinking chunks let them finish within a small
/// one, and the first, large grabs keep the contention low.
fn grab(cursor: &AtomicUsize, items: usize, threads: usize) -> Option<Range<usize>> {
    let mut start = cursor.load(Ordering::Relaxed);
    loop {
        if start >= items {
            return None;
        }
        let size = ((items - start) / (2 * threads)).max(1);
        match cursor.compare_exchange_weak(start, start + size, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return Some(start..start + size),
            Err(now) => start = now,
        }
    }
}

/// `f(0)`, …, `f(n - 1)`, computed on candle's threads (see [`for_chunks`]), in order.
pub fn map<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    map_when(true, n, f)
}

/// [`map`], on the calling thread unless `worth_it` (see [`for_chunks_when`]).
pub fn map_when<T: Send>(worth_it: bool, n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let slots: Vec<Mutex<Option<T>>> = (0..n).map(|_| Mutex::new(None)).collect();
    for_chunks_when(worth_it, n, |range| {
        for i in range {
            let v = f(i);
            *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
        }
    });
    slots.into_iter().map(|s| s.into_inner().unwrap_or_else(|e| e.into_inner()).expect("the pool runs every index")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn map_keeps_order_and_runs_every_index_once() {
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let out = super::map(1000, |i| {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            i * i
        });
        assert_eq!(out, (0..1000).map(|i| i * i).collect::<Vec<_>>());
        assert_eq!(calls.into_inner(), 1000);
        assert!(super::map(0, |i| i).is_empty());
        assert_eq!(super::map_when(false, 5, |i| i + 1), vec![1, 2, 3, 4, 5]);
    }

    #[test]
    fn chunks_cover_every_item_once_and_shrink_towards_the_end() {
        let cursor = std::sync::atomic::AtomicUsize::new(0);
        let chunks: Vec<_> = std::iter::from_fn(|| super::grab(&cursor, 1000, 2)).collect();
        assert_eq!(chunks.first(), Some(&(0..250)));
        assert!(chunks.windows(2).all(|w| w[0].end == w[1].start && w[0].len() >= w[1].len()));
        assert_eq!(chunks.last().map(|c| (c.end, c.len())), Some((1000, 1)));
        assert!(chunks.len() < 40, "{} grabs", chunks.len());
    }

    #[test]
    fn a_nested_call_runs_inline() {
        let out = super::map(8, |i| super::map(4, move |j| i * 4 + j).into_iter().sum::<usize>());
        assert_eq!(out, (0..8).map(|i| (0..4).map(|j| i * 4 + j).sum()).collect::<Vec<usize>>());
    }
}
