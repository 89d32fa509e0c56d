//! The candle example (`candle_serve`) and its helpers, in a crate of their
//! own so the Burn examples — the quickstart first — build without candle.
//!
//! * [`candle_mnist`] — a candle digit classifier trained from stores and
//!   served with `zrecord-candle`'s batcher.
//!
//! The README's code runs here as doc-tests: this crate sees every crate the
//! README shows (candle directly, Burn through its dev-dependencies).

pub mod candle_mnist;

#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
