//! The loader's one error type.

use zrecord::{DType, StoreKind};

/// Everything that can go wrong building or running a loader.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A loader needs at least one stream.
    #[error("a loader needs at least one stream")]
    NoStreams,

    /// Two streams have the same name.
    #[error("two streams are named {name:?}")]
    DuplicateStream {
        /// The repeated name.
        name: String,
    },

    /// Streams of different lengths cannot be gathered at the same indices.
    #[error(
        "stream {first:?} has {first_len} records but stream {other:?} has {other_len}; every stream must have the same length"
    )]
    LengthMismatch {
        /// The first stream.
        first: String,
        /// Its length.
        first_len: u64,
        /// The stream that differs.
        other: String,
        /// Its length.
        other_len: u64,
    },

    /// A subset names a record past the end of the streams.
    #[error("subset entry {position} is record {index}, but the streams have {len} records")]
    SubsetOutOfRange {
        /// Position in the subset.
        position: usize,
        /// The record it names.
        index: u64,
        /// The streams' length.
        len: u64,
    },

    /// The sampler configuration is invalid.
    #[error(transparent)]
    Sampler(#[from] zsampler::Error),

    /// A short last batch is a property of sequential passes; the shuffling
    /// modes define their own cycles.
    #[error("a short last batch needs Mode::Sequential, but the loader samples in {mode} mode")]
    ShortLastBatchNeedsSequential {
        /// The loader's mode.
        mode: zsampler::Mode,
    },

    /// A mixture needs at least one source.
    #[error("a mixture needs at least one source")]
    MixtureEmpty,

    /// A source of a mixture cannot be read with the others.
    #[error("mixture source {name:?}: {reason}")]
    MixtureSource {
        /// The source's name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A weight is negative, not finite, or (outside a schedule) zero.
    #[error("mixture source {name:?} has weight {weight}{}; weights must be finite and positive (zero only in a schedule)", .step.map(|s| format!(" in the schedule's row at step {s}")).unwrap_or_default())]
    MixtureWeight {
        /// The source's name.
        name: String,
        /// Its weight.
        weight: f64,
        /// The schedule row's step, for a scheduled weight.
        step: Option<u64>,
    },

    /// Every weight is zero: no source could be read.
    #[error("every mixture weight is zero{}", .step.map(|s| format!(" in the schedule's row at step {s}")).unwrap_or_default())]
    MixtureAllZero {
        /// The schedule row's step, for scheduled weights.
        step: Option<u64>,
    },

    /// Shares that cannot be read together.
    #[error("mixture source {name:?}: {reason}")]
    MixtureShares {
        /// The source's name.
        name: String,
        /// Why.
        reason: String,
    },

    /// A schedule that is empty, goes backwards or has rows of the wrong length.
    #[error("mixture schedule: {reason}")]
    MixtureSchedule {
        /// Why.
        reason: String,
    },

    /// A setting a mixture does not take.
    #[error("a loader over a mixture cannot also take {setting}")]
    MixtureUnsupported {
        /// The setting.
        setting: &'static str,
    },

    /// A saved state was taken over another mixture, or over none.
    #[error("the saved state was taken {}, the loader reads {}", describe_mixture(*.state), describe_mixture(*.loader))]
    MixtureStateMismatch {
        /// The fingerprint of the state's mixture, if it had one.
        state: Option<u64>,
        /// The fingerprint of this loader's mixture, if it has one.
        loader: Option<u64>,
    },

    /// A saved state does not fit these streams.
    #[error("the saved state was taken over {state_len} records, the streams have {len}")]
    StateMismatch {
        /// Length recorded in the state.
        state_len: u64,
        /// Length of the streams now.
        len: u64,
    },

    /// Gathering a stream failed at some step.
    #[error("step {step}: cannot gather stream {stream:?}")]
    Gather {
        /// The step.
        step: u64,
        /// The stream.
        stream: String,
        /// What the store reported.
        #[source]
        source: zrecord::Error,
    },

    /// The transform panicked at some step.
    #[error("step {step}: the transform panicked: {message}")]
    TransformPanicked {
        /// The step.
        step: u64,
        /// The panic message.
        message: String,
    },

    /// A transform could not use one record of its batch (an image that
    /// does not decode, a label out of range): the error the loader's
    /// [`BadRecords`](crate::BadRecords) policy applies to. Make one with
    /// [`Batch::bad_record`](crate::Batch::bad_record).
    #[error("step {step}: the record at position {position}{} cannot be used: {reason}", record.map(|r| format!(" (record {r})")).unwrap_or_default())]
    BadRecord {
        /// The step.
        step: u64,
        /// The record's position in the batch the transform was given.
        position: usize,
        /// The record's index, when the position is in the batch.
        record: Option<u64>,
        /// What is wrong with it.
        reason: String,
    },

    /// A worker thread could not be started.
    #[error("cannot start a loader thread")]
    Spawn(#[source] std::io::Error),

    /// A batch has no stream of that name.
    #[error("the batch has no stream {name:?} (it has {available:?})")]
    UnknownStream {
        /// The name asked for.
        name: String,
        /// The names it has.
        available: Vec<String>,
    },

    /// A stream is of the other kind than asked for.
    #[error("stream {name:?} is {found}, not {expected}")]
    WrongKind {
        /// The stream.
        name: String,
        /// The kind asked for.
        expected: StoreKind,
        /// Its kind.
        found: StoreKind,
    },

    /// A stream holds another dtype than asked for.
    #[error("stream {name:?} holds {found}, not {expected}")]
    WrongDType {
        /// The stream.
        name: String,
        /// The dtype asked for.
        expected: DType,
        /// Its dtype.
        found: DType,
    },

    /// A ragged stream's records cannot be padded into one array.
    #[error("stream {stream:?}: cannot pad")]
    Pad {
        /// The stream.
        stream: String,
        /// Why, from [`Padding::pad`](crate::Padding::pad):
        /// [`MixedRank`](Error::MixedRank) or [`PaddedTooLarge`](Error::PaddedTooLarge).
        #[source]
        source: Box<Error>,
    },

    /// Records to pad differ in rank: padding needs one.
    #[error(
        "record {record} has rank {found}, record 0 has rank {expected}; padding needs one rank"
    )]
    MixedRank {
        /// Position of the offending record in the batch.
        record: usize,
        /// The rank of record 0.
        expected: usize,
        /// Its rank.
        found: usize,
    },

    /// A padded batch would hold more elements than memory can address.
    #[error("padding to shape {shape:?} overflows")]
    PaddedTooLarge {
        /// The padded shape: records, then the extent of each axis.
        shape: Vec<usize>,
    },

    /// Values to pad do not hold exactly the elements their layout says.
    #[error("padding: the layout holds {expected} elements, the values {got}")]
    PaddingBuffer {
        /// Elements of the layout.
        expected: usize,
        /// Elements given.
        got: usize,
    },

    /// The stream's buffer was already taken out of this batch.
    #[error("stream {name:?} was already taken out of this batch")]
    Taken {
        /// The stream.
        name: String,
    },

    /// A token stream holds values that are not token ids.
    #[error("token streams hold integers, not {dtype}")]
    TokenDType {
        /// The stream's dtype.
        dtype: DType,
    },

    /// A token id does not fit `u32`.
    #[error("token {value} ({dtype}) is not a token id: packed tokens are u32")]
    TokenOutOfRange {
        /// The stream's dtype.
        dtype: DType,
        /// The value.
        value: i128,
    },

    /// Packing cannot go on: a bad configuration, a state saved over other
    /// data, or a stream without tokens.
    #[error("packing: {0}")]
    Packing(String),

    /// A launcher variable (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`) is missing
    /// or wrong.
    #[error("launcher variable {variable}: {reason}")]
    Launcher {
        /// The variable.
        variable: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

/// Shorthand for `Result<T, zrecord_loader::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn describe_mixture(fingerprint: Option<u64>) -> String {
    match fingerprint {
        Some(f) => format!("a mixture (fingerprint {f:016x})"),
        None => "no mixture".into(),
    }
}
