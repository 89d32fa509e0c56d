//! Runnable programs for zrecord (see the `[[example]]` targets), and the
//! README's code, compiled and run as doc-tests.

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
