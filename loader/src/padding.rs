//! Ragged records padded into one dense array — the part every tensor
//! library needs (extents, strides, the row walk, the mask), written once.

use zrecord::{Element, RaggedLayout};

use crate::{Error, Result};

/// How a batch of ragged records becomes one dense array: the fill value,
/// and how long the first axis (the sequence axis) is.
///
/// Every axis is padded to the batch's largest extent by default, each record
/// in the top-left corner of its slot, so rank-1 records `(Lᵢ,)` give
/// `(B, max Lᵢ)` and rank-2 records `(Hᵢ, Wᵢ)` give `(B, max Hᵢ, max Wᵢ)`.
/// [`max_len`](Self::max_len) and [`fixed_len`](Self::fixed_len) set the first
/// axis instead, truncating longer records to their leading elements.
///
/// A plain fill value converts into a `Padding` (`Padding::from(0)`), so
/// functions that take `impl Into<Padding<T>>` accept either.
///
/// ```
/// use zrecord::RaggedBatch;
/// use zrecord_loader::Padding;
///
/// let mut tokens = RaggedBatch::<u32>::new();
/// tokens.push(&[3], &[5, 6, 7])?;
/// tokens.push(&[1], &[8])?;
/// let padded = Padding::new(0).pad(tokens.values(), tokens.layout())?;
/// assert_eq!((padded.shape.as_slice(), padded.values.as_slice()), (&[2, 3][..], &[5, 6, 7, 8, 0, 0][..]));
/// assert_eq!(padded.mask, [true, true, true, true, false, false]);
/// assert_eq!(padded.lengths, [3, 1]);
///
/// let short = Padding::new(0).max_len(2).pad(tokens.values(), tokens.layout())?;
/// assert_eq!((short.values.as_slice(), short.lengths.as_slice()), (&[5, 6, 8, 0][..], &[2, 1][..]));
/// let wide = Padding::new(9).fixed_len(4).pad(tokens.values(), tokens.layout())?;
/// assert_eq!(wide.values, [5, 6, 7, 9, 8, 9, 9, 9]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Padding<T> {
    fill: T,
    first_axis: Extent,
}

/// The extent of the first axis of a padded record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Extent {
    /// The batch's longest.
    Longest,
    /// The batch's longest, at most this.
    AtMost(usize),
    /// Exactly this.
    Exactly(usize),
}

impl<T: Element> From<T> for Padding<T> {
    fn from(fill: T) -> Self {
        Padding::new(fill)
    }
}

impl<T: Element> Padding<T> {
    /// Pads with `fill`, every axis to the batch's largest extent.
    pub fn new(fill: T) -> Self {
        Padding {
            fill,
            first_axis: Extent::Longest,
        }
    }

    /// The first axis at most `len` long: records longer than that keep
    /// their first `len` entries along it (their length becomes `len`).
    pub fn max_len(mut self, len: usize) -> Self {
        self.first_axis = Extent::AtMost(len);
        self
    }

    /// The first axis exactly `len` long whatever the batch holds: shorter
    /// records are padded, longer ones keep their first `len` entries.
    pub fn fixed_len(mut self, len: usize) -> Self {
        self.first_axis = Extent::Exactly(len);
        self
    }

    /// The value written into padding.
    pub fn fill(&self) -> T {
        self.fill
    }

    /// Pads the packed records `values`, laid out by `layout` (a
    /// [`RaggedBatch`](zrecord::RaggedBatch)'s `values()` and `layout()`, or a
    /// loader batch's ragged view), into one array of shape
    /// `(B, e₀, e₁, …)`. Every element is written once.
    ///
    /// # Errors
    /// [`Error::PaddingBuffer`] unless `values` holds exactly the layout's
    /// elements; [`Error::MixedRank`] when the records differ in rank;
    /// [`Error::PaddedTooLarge`] when the padded array would hold more
    /// elements than memory can address.
    pub fn pad(&self, values: &[T], layout: &RaggedLayout) -> Result<PaddedBatch<T>> {
        if values.len() != layout.total() {
            return Err(Error::PaddingBuffer {
                expected: layout.total(),
                got: values.len(),
            });
        }
        let n = layout.len();
        let rank = layout.shape(0).map_or(0, <[usize]>::len);
        let mut extents = vec![0usize; rank];
        for k in 0..n {
            let shape = layout.shape(k).unwrap_or(&[]);
            if shape.len() != rank {
                return Err(Error::MixedRank {
                    record: k,
                    expected: rank,
                    found: shape.len(),
                });
            }
            for (e, &d) in extents.iter_mut().zip(shape) {
                *e = (*e).max(d);
            }
        }
        if let Some(first) = extents.first_mut() {
            *first = match self.first_axis {
                Extent::Longest => *first,
                Extent::AtMost(len) => (*first).min(len),
                Extent::Exactly(len) => len,
            };
        }
        let mut shape = Vec::with_capacity(rank + 1);
        shape.push(n);
        shape.extend_from_slice(&extents);
        let per_record = extents
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d));
        let Some((per_record, total)) = per_record.and_then(|r| Some((r, r.checked_mul(n)?)))
        else {
            return Err(Error::PaddedTooLarge { shape });
        };

        let mut padded = vec![self.fill; total];
        let mut mask = vec![false; total];
        let mut lengths = Vec::with_capacity(n);
        let walk = RowWalk::new(&extents);
        for k in 0..n {
            let record_shape = layout.shape(k).unwrap_or(&[]);
            let record = layout.range(k).and_then(|r| values.get(r)).unwrap_or(&[]);
            lengths.push(record_shape.first().map_or(1, |&d| d.min(walk.first())));
            let at = k * per_record; // at most `total`, which was checked
            let slot = at..at + per_record;
            if let (Some(slot), Some(flags)) = (padded.get_mut(slot.clone()), mask.get_mut(slot)) {
                walk.copy(record, record_shape, slot, flags);
            }
        }
        Ok(PaddedBatch {
            values: padded,
            mask,
            lengths,
            shape,
        })
    }
}

/// Ragged records padded into one dense array: what [`Padding::pad`] returns.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PaddedBatch<T> {
    /// The records, padded, row-major in [`shape`](Self::shape).
    pub values: Vec<T>,
    /// `true` where `values` holds a record's element, `false` on padding.
    pub mask: Vec<bool>,
    /// Each record's extent along its first axis after truncation (its
    /// sequence length); 1 for scalar records.
    pub lengths: Vec<usize>,
    /// `(B, e₀, e₁, …)`: the records, then the padded extent of each axis
    /// (`(B,)` for scalar records).
    pub shape: Vec<usize>,
}

/// Copies records into padded slots, one run along the last axis (a "row")
/// at a time.
struct RowWalk {
    extents: Vec<usize>,
    /// Row-major strides of a padded slot.
    strides: Vec<usize>,
}

impl RowWalk {
    fn new(extents: &[usize]) -> RowWalk {
        let mut strides = vec![1usize; extents.len()];
        for axis in (0..extents.len().saturating_sub(1)).rev() {
            // Cannot overflow: the product of all extents was checked.
            strides[axis] = strides[axis + 1] * extents[axis + 1];
        }
        RowWalk {
            extents: extents.to_vec(),
            strides,
        }
    }

    /// The padded extent of the first axis (1 for scalars).
    fn first(&self) -> usize {
        self.extents.first().copied().unwrap_or(1)
    }

    /// Copies `record` of `shape` into `slot`, keeping what fits the
    /// extents, and marks what it wrote in `flags`.
    fn copy<T: Copy>(&self, record: &[T], shape: &[usize], slot: &mut [T], flags: &mut [bool]) {
        let Some((&row, outer)) = shape.split_last() else {
            // A scalar: one element.
            copy_run(record, slot, flags);
            return;
        };
        let keep = row.min(self.extents[outer.len()]);
        if row == 0 || keep == 0 {
            return;
        }
        if outer.is_empty() {
            copy_run(&record[..keep.min(record.len())], slot, flags);
            return;
        }
        // The index of the current row over all axes but the last, last fastest.
        let mut index = vec![0usize; outer.len()];
        for chunk in record.chunks_exact(row) {
            if index.iter().zip(&self.extents).all(|(i, e)| i < e) {
                let offset: usize = index.iter().zip(&self.strides).map(|(i, s)| i * s).sum();
                if let (Some(dst), Some(mark)) = (slot.get_mut(offset..), flags.get_mut(offset..)) {
                    copy_run(&chunk[..keep], dst, mark);
                }
            }
            for axis in (0..index.len()).rev() {
                index[axis] += 1;
                if index[axis] < outer[axis] {
                    break;
                }
                index[axis] = 0;
            }
            if index.iter().all(|&i| i == 0) || index[0] >= self.extents[0] {
                break; // past the last row, or past the rows that fit
            }
        }
    }
}

/// Copies `run` to the start of `dst` and marks it in `flags`.
fn copy_run<T: Copy>(run: &[T], dst: &mut [T], flags: &mut [bool]) {
    if let (Some(dst), Some(flags)) = (dst.get_mut(..run.len()), flags.get_mut(..run.len())) {
        dst.copy_from_slice(run);
        flags.fill(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zrecord::RaggedBatch;

    fn batch<T: Element>(records: &[(&[usize], &[T])]) -> RaggedBatch<T> {
        let mut b = RaggedBatch::new();
        for (shape, values) in records {
            b.push(shape, values).unwrap();
        }
        b
    }

    #[test]
    fn rank_two_records_sit_in_the_top_left_corner() {
        let b = batch::<u8>(&[(&[2, 3], &[1, 2, 3, 4, 5, 6]), (&[3, 1], &[7, 8, 9])]);
        let p = Padding::new(0).pad(b.values(), b.layout()).unwrap();
        assert_eq!(p.shape, [2, 3, 3]);
        #[rustfmt::skip]
        assert_eq!(p.values, [
            1, 2, 3,  4, 5, 6,  0, 0, 0,
            7, 0, 0,  8, 0, 0,  9, 0, 0,
        ]);
        assert_eq!(p.mask.iter().filter(|&&m| m).count(), 9);
        assert_eq!(p.lengths, [2, 3]);
    }

    #[test]
    fn truncation_keeps_the_leading_rows_and_columns() {
        let b = batch::<u8>(&[(&[3, 2], &[1, 2, 3, 4, 5, 6]), (&[1, 1], &[7])]);
        let p = Padding::new(0)
            .max_len(2)
            .pad(b.values(), b.layout())
            .unwrap();
        assert_eq!(p.shape, [2, 2, 2]);
        assert_eq!(p.values, [1, 2, 3, 4, 7, 0, 0, 0]);
        assert_eq!(p.lengths, [2, 1]);
        let p = Padding::new(0)
            .fixed_len(0)
            .pad(b.values(), b.layout())
            .unwrap();
        assert_eq!((p.shape.as_slice(), p.values.len()), (&[2, 0, 2][..], 0));
    }

    #[test]
    fn scalars_and_empty_batches() {
        let b = batch::<i64>(&[(&[], &[4]), (&[], &[2])]);
        let p = Padding::new(0).pad(b.values(), b.layout()).unwrap();
        assert_eq!(
            (p.shape, p.values, p.lengths),
            (vec![2], vec![4, 2], vec![1, 1])
        );
        let empty = RaggedBatch::<f32>::new();
        let p = Padding::new(0.0)
            .pad(empty.values(), empty.layout())
            .unwrap();
        assert_eq!((p.shape, p.values.len()), (vec![0], 0));
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        let b = batch::<u8>(&[(&[2], &[1, 2]), (&[1, 1], &[3])]);
        assert!(matches!(
            Padding::new(0).pad(b.values(), b.layout()),
            Err(Error::MixedRank {
                record: 1,
                expected: 1,
                found: 2
            })
        ));
        assert!(matches!(
            Padding::new(0).pad(&[1], b.layout()),
            Err(Error::PaddingBuffer {
                expected: 3,
                got: 1
            })
        ));
        // Extents whose product overflows: checked, not wrapped.
        let mut layout = RaggedLayout::new();
        layout.push(&[1 << 40, 0]).unwrap();
        layout.push(&[0, 1 << 40]).unwrap();
        assert!(matches!(
            Padding::new(0u8).pad(&[], &layout),
            Err(Error::PaddedTooLarge { .. })
        ));
    }
}
