"""zrecord's dtypes and numpy's."""

import numpy as np

_NUMPY = {
    "bool": np.dtype(np.bool_),
    "u8": np.dtype(np.uint8),
    "i8": np.dtype(np.int8),
    "u16": np.dtype(np.uint16),
    "i16": np.dtype(np.int16),
    "u32": np.dtype(np.uint32),
    "i32": np.dtype(np.int32),
    "u64": np.dtype(np.uint64),
    "i64": np.dtype(np.int64),
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}


NAMES = (*_NUMPY, "bf16")


def _bfloat16():
    try:
        import ml_dtypes  # the bfloat16 numpy dtype JAX and others use

        return np.dtype(ml_dtypes.bfloat16)
    except ImportError:
        return None


def to_numpy(name):
    """The numpy dtype of zrecord dtype `name`. `bf16` is ml_dtypes'
    bfloat16 when ml_dtypes is installed, else its bits as uint16."""
    if name == "bf16":
        return _bfloat16() or np.dtype(np.uint16)
    return _NUMPY[name]


def from_numpy(dtype):
    """The zrecord dtype name of numpy dtype `dtype`."""
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(
            f"dtype {dtype!r} is neither a numpy dtype nor one of zrecord's: {', '.join(NAMES)}"
        ) from None
    for name, candidate in _NUMPY.items():
        if candidate == dtype:
            return name
    if dtype.name == "bfloat16":
        return "bf16"
    raise TypeError(f"numpy dtype {dtype} has no zrecord dtype")


def little_endian(array):
    """`array` C-contiguous and little-endian, copied only if it is not."""
    array = np.ascontiguousarray(array)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    return array
