//! One Arrow column → records of a store: what kind of store it makes, and
//! each batch's values and shapes.
//!
//! Numbers and booleans are scalars; a fixed-size list adds a fixed axis, a
//! variable list a variable one (its rows must be rectangular: every inner
//! list of a row as long as the others); strings and binaries are `u8`
//! vectors.

use anyhow::{Result, bail};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, OffsetSizeTrait};
use arrow_schema::DataType;
use zrecord::{DType, DynRaggedBatch, DynVec, RaggedLayout};

use super::super::values::ragged_batch;
use zrecord::Schema;

/// The store a column of `data_type` becomes.
pub(crate) fn shape(name: &str, data_type: &DataType) -> Result<Schema> {
    let (dtype, dims) = layout(name, data_type)?;
    Ok(match dims.iter().all(Option::is_some) {
        true => Schema::Dense {
            dtype,
            item_shape: dims.into_iter().flatten().collect(),
        },
        false => Schema::Ragged { dtype },
    })
}

/// The leaf dtype and the axes (`None` where variable) of a column's records.
fn layout(name: &str, data_type: &DataType) -> Result<(DType, Vec<Option<usize>>)> {
    use DataType as D;
    Ok(match data_type {
        D::Utf8 | D::LargeUtf8 | D::Utf8View | D::Binary | D::LargeBinary | D::BinaryView => {
            (DType::U8, vec![None])
        }
        D::FixedSizeBinary(n) => (DType::U8, vec![Some(*n as usize)]),
        D::FixedSizeList(child, n) => {
            let (dtype, mut dims) = layout(name, child.data_type())?;
            dims.insert(0, Some(*n as usize));
            (dtype, dims)
        }
        D::List(child) | D::LargeList(child) => {
            let (dtype, mut dims) = layout(name, child.data_type())?;
            dims.insert(0, None);
            (dtype, dims)
        }
        other => match leaf_dtype(other) {
            Some(dtype) => (dtype, Vec::new()),
            None => bail!(
                "column {name:?} is of type {other}, which cannot be imported \
                 (numbers, booleans, strings, binaries and lists of them can)"
            ),
        },
    })
}

fn leaf_dtype(data_type: &DataType) -> Option<DType> {
    use DataType as D;
    Some(match data_type {
        D::Boolean => DType::Bool,
        D::Int8 => DType::I8,
        D::Int16 => DType::I16,
        D::Int32 => DType::I32,
        D::Int64 => DType::I64,
        D::UInt8 => DType::U8,
        D::UInt16 => DType::U16,
        D::UInt32 => DType::U32,
        D::UInt64 => DType::U64,
        D::Float16 => DType::F16,
        D::Float32 => DType::F32,
        D::Float64 => DType::F64,
        _ => return None,
    })
}

/// What a null becomes: `--fill VALUE` parsed for the column's leaf dtype.
#[derive(Clone, Debug)]
pub(crate) struct Fill {
    /// One element of VALUE (little-endian), or VALUE's bytes for strings.
    element: DynVec,
    text: Vec<u8>,
}

impl Fill {
    /// `value` for a leaf of `dtype`.
    pub(crate) fn parse(value: &str, dtype: DType) -> Result<Fill> {
        let bad = || anyhow::anyhow!("--fill {value:?} is not a {dtype} value");
        let element = match dtype {
            DType::Bool => DynVec::Bool(vec![match value {
                "true" | "1" => true,
                "false" | "0" => false,
                _ => return Err(bad()),
            }]),
            DType::U8 => DynVec::U8(vec![value.parse().map_err(|_| bad())?]),
            DType::I8 => DynVec::I8(vec![value.parse().map_err(|_| bad())?]),
            DType::U16 => DynVec::U16(vec![value.parse().map_err(|_| bad())?]),
            DType::I16 => DynVec::I16(vec![value.parse().map_err(|_| bad())?]),
            DType::U32 => DynVec::U32(vec![value.parse().map_err(|_| bad())?]),
            DType::I32 => DynVec::I32(vec![value.parse().map_err(|_| bad())?]),
            DType::U64 => DynVec::U64(vec![value.parse().map_err(|_| bad())?]),
            DType::I64 => DynVec::I64(vec![value.parse().map_err(|_| bad())?]),
            DType::F16 => DynVec::F16(vec![half::f16::from_f64(value.parse().map_err(|_| bad())?)]),
            DType::BF16 => DynVec::BF16(vec![half::bf16::from_f64(
                value.parse().map_err(|_| bad())?,
            )]),
            DType::F32 => DynVec::F32(vec![value.parse().map_err(|_| bad())?]),
            DType::F64 => DynVec::F64(vec![value.parse().map_err(|_| bad())?]),
            other => bail!("--fill cannot make a {other} value"),
        };
        Ok(Fill {
            element,
            text: value.as_bytes().to_vec(),
        })
    }
}

/// Converts batches of one column, appending to a values buffer.
pub(crate) struct Converter {
    name: String,
    fill: Option<Fill>,
    /// Ragged rows as their elements end to end (one axis), jagged or not.
    flatten: bool,
}

/// A null that `--fill` did not cover.
struct Null;

impl Converter {
    pub(crate) fn new(name: &str, fill: Option<Fill>, flatten: bool) -> Converter {
        Converter {
            name: name.to_string(),
            fill,
            flatten,
        }
    }

    /// The dense records of `array`: their values, row-major. `first_row`
    /// is the row number of the array's first row, for messages.
    pub(crate) fn dense(&self, array: &ArrayRef, dtype: DType, first_row: u64) -> Result<DynVec> {
        let mut values = DynVec::new(dtype);
        if self
            .elements(array, 0, array.len(), false, &mut values)
            .is_ok()
        {
            return Ok(values);
        }
        // Find the row to name: one row at a time.
        let row = (0..array.len())
            .find(|&r| {
                let mut scratch = DynVec::new(dtype);
                self.elements(array, r, r + 1, false, &mut scratch).is_err()
            })
            .unwrap_or(0);
        Err(self.null_error(first_row + row as u64))
    }

    /// The ragged records of `array`, one per row.
    pub(crate) fn ragged(
        &self,
        array: &ArrayRef,
        dtype: DType,
        first_row: u64,
    ) -> Result<DynRaggedBatch> {
        let mut values = DynVec::new(dtype);
        let mut layout = RaggedLayout::new();
        if let Some(offsets) = self.flat_runs(array) {
            // Strings, binaries and lists of scalars without nulls: the values
            // in one copy, each row's length from the offsets.
            let child = match array.data_type() {
                DataType::List(_) => Some(array.as_list::<i32>().values()),
                DataType::LargeList(_) => Some(array.as_list::<i64>().values()),
                _ => None,
            };
            let (start, end) = (offsets[0], offsets[offsets.len() - 1]);
            match child {
                Some(child) => self.append_values(child, start, end, &mut values),
                None => self.append_values(array, 0, array.len(), &mut values),
            }
            let rows = offsets.len().saturating_sub(1);
            layout.reserve(rows, rows);
            for w in offsets.windows(2) {
                layout.push(&[w[1] - w[0]])?;
            }
            return ragged_batch(values, layout);
        }
        for row in 0..array.len() {
            let before = values.len();
            let shape = self
                .shape_of(array, row, &mut values)
                .map_err(|e| match e {
                    Problem::Null => self.null_error(first_row + row as u64),
                    Problem::Jagged(lengths) => anyhow::anyhow!(
                        "column {:?} row {}: its inner lists have different lengths ({lengths:?}), \
                         so the row is not an array (--flatten imports it as its elements end to end)",
                        self.name,
                        first_row + row as u64
                    ),
                })?;
            match self.flatten {
                true => layout.push(&[values.len() - before])?,
                false => layout.push(&shape)?,
            };
        }
        ragged_batch(values, layout)
    }

    /// The row offsets of a column whose rows are runs of scalars with no
    /// null anywhere: strings, binaries, or variable lists of numbers.
    fn flat_runs(&self, array: &ArrayRef) -> Option<Vec<usize>> {
        use DataType as D;
        fn runs<O: OffsetSizeTrait>(offsets: &[O]) -> Vec<usize> {
            offsets.iter().map(|o| o.as_usize()).collect()
        }
        if array.logical_null_count() > 0 {
            return None;
        }
        let scalar_child = |child: &ArrayRef| {
            leaf_dtype(child.data_type()).is_some() && child.logical_null_count() == 0
        };
        Some(match array.data_type() {
            D::Utf8 => runs(array.as_string::<i32>().value_offsets()),
            D::LargeUtf8 => runs(array.as_string::<i64>().value_offsets()),
            D::Binary => runs(array.as_binary::<i32>().value_offsets()),
            D::LargeBinary => runs(array.as_binary::<i64>().value_offsets()),
            D::List(_) if scalar_child(array.as_list::<i32>().values()) => {
                runs(array.as_list::<i32>().value_offsets())
            }
            D::LargeList(_) if scalar_child(array.as_list::<i64>().values()) => {
                runs(array.as_list::<i64>().value_offsets())
            }
            _ => return None,
        })
    }

    fn null_error(&self, row: u64) -> anyhow::Error {
        anyhow::anyhow!(
            "column {:?} row {row} is null (or holds a null); give --fill VALUE to import nulls as VALUE",
            self.name
        )
    }

    /// Appends row `row` of `array` and returns its shape.
    fn shape_of(
        &self,
        array: &ArrayRef,
        row: usize,
        out: &mut DynVec,
    ) -> Result<Vec<usize>, Problem> {
        let null = array.is_null(row);
        if null && self.fill.is_none() {
            return Err(Problem::Null);
        }
        use DataType as D;
        match array.data_type() {
            D::List(_) => self.list_row(array.as_list::<i32>(), row, null, out),
            D::LargeList(_) => self.list_row(array.as_list::<i64>(), row, null, out),
            D::FixedSizeList(_, n) => {
                let child = array.as_fixed_size_list().values();
                let n = *n as usize;
                let inner = self.elements(child, row * n, (row + 1) * n, null, out)?;
                Ok(std::iter::once(n).chain(inner).collect())
            }
            _ => {
                let before = out.len();
                self.append(array, row, row + 1, out, false)
                    .map_err(|_| Problem::Null)?;
                // Strings and binaries are vectors, everything else scalars.
                Ok(match is_bytes(array.data_type()) {
                    true => vec![out.len() - before],
                    false => Vec::new(),
                })
            }
        }
    }

    fn list_row<O: OffsetSizeTrait>(
        &self,
        list: &arrow_array::GenericListArray<O>,
        row: usize,
        null: bool,
        out: &mut DynVec,
    ) -> Result<Vec<usize>, Problem> {
        if null {
            // A null list (under --fill) is an empty one.
            return Ok(vec![0]);
        }
        let offsets = list.value_offsets();
        let (start, end) = (offsets[row].as_usize(), offsets[row + 1].as_usize());
        let inner = self.elements(list.values(), start, end, false, out)?;
        Ok(std::iter::once(end - start).chain(inner).collect())
    }

    /// Appends elements `start..end` of `array` (all filled if `null`) and
    /// returns the shape they share.
    fn elements(
        &self,
        array: &ArrayRef,
        start: usize,
        end: usize,
        null: bool,
        out: &mut DynVec,
    ) -> Result<Vec<usize>, Problem> {
        use DataType as D;
        let nested = matches!(
            array.data_type(),
            D::List(_) | D::LargeList(_) | D::FixedSizeList(..)
        ) || is_bytes(array.data_type());
        if !nested {
            self.append(array, start, end, out, null)
                .map_err(|_| Problem::Null)?;
            return Ok(Vec::new());
        }
        // A run of fixed-size lists without nulls: their children in one go.
        if let D::FixedSizeList(_, n) = array.data_type()
            && (null
                || array
                    .nulls()
                    .is_none_or(|b| (start..end).all(|i| b.is_valid(i))))
        {
            let n = *n as usize;
            let child = array.as_fixed_size_list().values();
            let inner = self.elements(child, start * n, end * n, null, out)?;
            return Ok(std::iter::once(n).chain(inner).collect());
        }
        let mut shape: Option<Vec<usize>> = None;
        let mut lengths = Vec::new();
        for i in start..end {
            let s = match null {
                true => self.shape_of_null(array, out)?,
                false => self.shape_of(array, i, out)?,
            };
            lengths.push(s.first().copied().unwrap_or(0));
            match &shape {
                Some(first) if *first != s && !self.flatten => {
                    return Err(Problem::Jagged(lengths));
                }
                Some(_) => {}
                None => shape = Some(s),
            }
        }
        Ok(shape.unwrap_or_else(|| empty_shape(array.data_type())))
    }

    /// A variable list, string or binary under a null parent: an empty
    /// list, or VALUE's bytes.
    fn shape_of_null(&self, array: &ArrayRef, out: &mut DynVec) -> Result<Vec<usize>, Problem> {
        match is_bytes(array.data_type()) {
            true => {
                let fill = self.fill.as_ref().ok_or(Problem::Null)?;
                extend_bytes(out, &fill.text);
                Ok(vec![fill.text.len()])
            }
            false => Ok(empty_shape(array.data_type())),
        }
    }

    /// Appends leaf elements `start..end` of `array`: numbers, booleans,
    /// or the bytes of strings/binaries. All filled when `null`.
    fn append(
        &self,
        array: &ArrayRef,
        start: usize,
        end: usize,
        out: &mut DynVec,
        null: bool,
    ) -> Result<(), Null> {
        let n = end - start;
        let nulls = |a: &dyn Array| -> Option<usize> {
            a.nulls().and_then(|b| (start..end).find(|&i| b.is_null(i)))
        };
        let fill = self.fill.as_ref();
        if null || nulls(array.as_ref()).is_some() {
            let fill = fill.ok_or(Null)?;
            if is_bytes(array.data_type()) {
                // Strings with nulls: element by element.
                for i in start..end {
                    match null || array.is_null(i) {
                        true => extend_bytes(out, &fill.text),
                        false => self.append(array, i, i + 1, out, false)?,
                    }
                }
                return Ok(());
            }
            let before = out.len();
            self.append_values(array, start, end, out);
            fill_nulls(out, before, array, start, n, null, &fill.element);
            return Ok(());
        }
        self.append_values(array, start, end, out);
        Ok(())
    }

    /// Appends elements `start..end` as they are (nulls hold arbitrary values).
    fn append_values(&self, array: &ArrayRef, start: usize, end: usize, out: &mut DynVec) {
        macro_rules! primitive {
            ($t:ty, $v:ident) => {
                if let DynVec::$v(v) = out {
                    v.extend_from_slice(&array.as_primitive::<$t>().values()[start..end]);
                }
            };
        }
        use DataType as D;
        match array.data_type() {
            D::Boolean => {
                if let DynVec::Bool(v) = out {
                    let b = array.as_boolean();
                    v.extend((start..end).map(|i| b.value(i)));
                }
            }
            D::Int8 => primitive!(Int8Type, I8),
            D::Int16 => primitive!(Int16Type, I16),
            D::Int32 => primitive!(Int32Type, I32),
            D::Int64 => primitive!(Int64Type, I64),
            D::UInt8 => primitive!(UInt8Type, U8),
            D::UInt16 => primitive!(UInt16Type, U16),
            D::UInt32 => primitive!(UInt32Type, U32),
            D::UInt64 => primitive!(UInt64Type, U64),
            D::Float16 => primitive!(Float16Type, F16),
            D::Float32 => primitive!(Float32Type, F32),
            D::Float64 => primitive!(Float64Type, F64),
            D::Utf8 => extend_offsets(
                out,
                array.as_string::<i32>().value_offsets(),
                array.as_string::<i32>().values(),
                start,
                end,
            ),
            D::LargeUtf8 => extend_offsets(
                out,
                array.as_string::<i64>().value_offsets(),
                array.as_string::<i64>().values(),
                start,
                end,
            ),
            D::Binary => extend_offsets(
                out,
                array.as_binary::<i32>().value_offsets(),
                array.as_binary::<i32>().values(),
                start,
                end,
            ),
            D::LargeBinary => extend_offsets(
                out,
                array.as_binary::<i64>().value_offsets(),
                array.as_binary::<i64>().values(),
                start,
                end,
            ),
            D::Utf8View => {
                let a = array.as_string_view();
                (start..end).for_each(|i| extend_bytes(out, a.value(i).as_bytes()));
            }
            D::BinaryView => {
                let a = array.as_binary_view();
                (start..end).for_each(|i| extend_bytes(out, a.value(i)));
            }
            D::FixedSizeBinary(_) => {
                let a = array.as_fixed_size_binary();
                (start..end).for_each(|i| extend_bytes(out, a.value(i)));
            }
            _ => {}
        }
    }
}

/// Why a row cannot be a record.
enum Problem {
    Null,
    Jagged(Vec<usize>),
}

impl From<Null> for Problem {
    fn from(_: Null) -> Problem {
        Problem::Null
    }
}

fn is_bytes(data_type: &DataType) -> bool {
    use DataType as D;
    matches!(
        data_type,
        D::Utf8
            | D::LargeUtf8
            | D::Utf8View
            | D::Binary
            | D::LargeBinary
            | D::BinaryView
            | D::FixedSizeBinary(_)
    )
}

/// The shape of an element of an empty run: fixed axes as they are,
/// variable ones 0.
fn empty_shape(data_type: &DataType) -> Vec<usize> {
    use DataType as D;
    match data_type {
        D::FixedSizeList(child, n) => std::iter::once(*n as usize)
            .chain(empty_shape(child.data_type()))
            .collect(),
        D::List(child) | D::LargeList(child) => std::iter::once(0)
            .chain(empty_shape(child.data_type()))
            .collect(),
        D::FixedSizeBinary(n) => vec![*n as usize],
        d if is_bytes(d) => vec![0],
        _ => Vec::new(),
    }
}

fn extend_bytes(out: &mut DynVec, bytes: &[u8]) {
    if let DynVec::U8(v) = out {
        v.extend_from_slice(bytes);
    }
}

fn extend_offsets<O: OffsetSizeTrait>(
    out: &mut DynVec,
    offsets: &[O],
    values: &[u8],
    start: usize,
    end: usize,
) {
    extend_bytes(
        out,
        &values[offsets[start].as_usize()..offsets[end].as_usize()],
    );
}

/// Overwrites the nulls among the `n` elements appended at `before` with
/// `fill` (all of them when `all`).
fn fill_nulls(
    out: &mut DynVec,
    before: usize,
    array: &ArrayRef,
    start: usize,
    n: usize,
    all: bool,
    fill: &DynVec,
) {
    macro_rules! each {
        ($($v:ident),*) => {
            match (out, fill) {
                $((DynVec::$v(v), DynVec::$v(f)) => {
                    for k in 0..n {
                        if all || array.is_null(start + k) {
                            v[before + k] = f[0];
                        }
                    }
                })*
                _ => {}
            }
        };
    }
    each!(
        Bool, U8, I8, U16, I16, U32, I32, U64, I64, F16, BF16, F32, F64
    );
}
