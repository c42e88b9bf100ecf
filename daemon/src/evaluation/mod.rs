//! SEGI evaluations (segi.txt, decisions 1 to 9): an evaluator runs on a submission, and its
//! stdout becomes text and data events.
//!
//! - [`request`]: an `evaluate` request checked and turned into a run spec (fields, problem
//!   directory, environment).
//! - [`markers`]: fresh random data markers for each evaluation.
//! - [`parser`]: the pure stdout parser, fed byte chunks as they are read (no I/O, no clock).
//! - [`stdout`]: the pump that reads stdout, measures silence and feeds the parser.

pub mod markers;
pub mod parser;
pub mod request;
pub mod stdout;
