//! SEGI evaluations (segi.txt, decisions 1 to 9): an evaluator's stdout becomes text and data
//! events.
//!
//! - [`parser`]: the pure stdout parser, fed byte chunks as they are read (no I/O, no clock).

pub mod parser;
