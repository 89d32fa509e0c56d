//! Buffers of gathered arrays that Python has dropped, kept for the next
//! gathers of the same store.

use std::sync::{Arc, Mutex, PoisonError};

use zrecord::{DType, DynRaggedBatch, DynVec};

/// Buffers of gathered arrays that Python has dropped, for the next
/// gathers of the same store to reuse: a loop that gathers a batch while
/// the last one is dropped allocates (and page-faults) nothing after the
/// first two, as a Rust loop reusing one buffer does.
#[derive(Default)]
pub struct Recycler {
    dense: Mutex<Vec<(usize, DynVec)>>,
    ragged: Mutex<Vec<(usize, DynRaggedBatch)>>,
}

/// Buffers kept per store and kind: the batch in use and the one just dropped.
const KEEP: usize = 2;

/// A buffer's type and the pool of it a [`Recycler`] keeps.
pub trait Reusable: Sized + Send + Sync + 'static {
    fn dtype(&self) -> DType;
    fn empty(dtype: DType) -> Self;
    fn pool(recycler: &Recycler) -> &Mutex<Vec<(usize, Self)>>;
}

impl Reusable for DynVec {
    fn dtype(&self) -> DType {
        DynVec::dtype(self)
    }
    fn empty(dtype: DType) -> Self {
        DynVec::new(dtype)
    }
    fn pool(recycler: &Recycler) -> &Mutex<Vec<(usize, Self)>> {
        &recycler.dense
    }
}

impl Reusable for DynRaggedBatch {
    fn dtype(&self) -> DType {
        DynRaggedBatch::dtype(self)
    }
    fn empty(dtype: DType) -> Self {
        DynRaggedBatch::new(dtype)
    }
    fn pool(recycler: &Recycler) -> &Mutex<Vec<(usize, Self)>> {
        &recycler.ragged
    }
}

impl Recycler {
    /// A buffer last used for `slot` (a stream), or a new one of `dtype`.
    pub fn take<T: Reusable>(&self, slot: usize, dtype: DType) -> T {
        let mut free = T::pool(self).lock().unwrap_or_else(PoisonError::into_inner);
        match free
            .iter()
            .position(|(s, v)| *s == slot && v.dtype() == dtype)
        {
            Some(at) => free.swap_remove(at).1,
            None => T::empty(dtype),
        }
    }

    fn give<T: Reusable>(&self, slot: usize, values: T) {
        let mut free = T::pool(self).lock().unwrap_or_else(PoisonError::into_inner);
        if free.len() < KEEP {
            free.push((slot, values));
        }
    }
}

/// A gathered buffer that goes back to its store's [`Recycler`] when the
/// last array over it is gone.
pub struct Recycled<T: Reusable> {
    values: T,
    slot: usize,
    home: Arc<Recycler>,
}

impl<T: Reusable> Recycled<T> {
    /// `values`, taken from `home` for `slot`, to go back there.
    pub fn new(values: T, slot: usize, home: &Arc<Recycler>) -> Recycled<T> {
        Recycled {
            values,
            slot,
            home: Arc::clone(home),
        }
    }
}

impl<T: Reusable> Drop for Recycled<T> {
    fn drop(&mut self) {
        let empty = T::empty(self.values.dtype());
        let values = std::mem::replace(&mut self.values, empty);
        self.home.give(self.slot, values);
    }
}
