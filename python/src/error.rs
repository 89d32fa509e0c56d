//! Rust errors as Python exceptions, carrying the Rust error's message.

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::{PyErr, create_exception};

create_exception!(
    _zrecord,
    ZrecordError,
    pyo3::exceptions::PyException,
    "An error from a zrecord store, dataset or loader: the message names the \
     path, index or value that went wrong."
);

/// A store error: an index past the end is an `IndexError`, a bad argument
/// a `ValueError`, anything else a `ZrecordError`.
pub fn store(error: zrecord::Error) -> PyErr {
    match error {
        zrecord::Error::IndexOutOfRange { .. } => PyIndexError::new_err(error.to_string()),
        zrecord::Error::InvalidArgument(_)
        | zrecord::Error::DTypeMismatch { .. }
        | zrecord::Error::BufferLength { .. }
        | zrecord::Error::PartialRecord { .. }
        | zrecord::Error::InvalidBool { .. } => PyValueError::new_err(error.to_string()),
        _ => ZrecordError::new_err(chain(&error)),
    }
}

/// A loader error as a `ZrecordError`, with the causes' messages after its
/// own (a gather's error names the step and stream, its cause the record).
pub fn loader(error: zrecord_loader::Error) -> PyErr {
    ZrecordError::new_err(chain(&error))
}

/// An object-storage error as a `ZrecordError`, with its causes.
pub fn remote(error: zrecord_remote::Error) -> PyErr {
    ZrecordError::new_err(chain(&error))
}

/// `error: its cause: its cause's cause …`
fn chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        message.push_str(": ");
        message.push_str(&e.to_string());
        cause = e.source();
    }
    message
}

/// A bad argument, named.
pub fn value(message: impl Into<String>) -> PyErr {
    PyValueError::new_err(message.into())
}
