//! Judging in the manner of Sphere Engine (sphere-judges.txt, decisions 15 to 17): a
//! submission runs on each test of a problem package, a test case judge decides each test, a
//! master judge sums the tests up.
//!
//! - [`problem`]: a problem package (`problem.toml`, `tests/N.in|out`) read and checked.
//! - [`languages`]: `policies/languages.toml`, how sources are compiled and run.
//! - [`builtin`]: the built-in test case judges and master judges, pure functions.
//! - [`streams`]: the Sphere stream formats (master judge lines, scores, report lines).
//! - [`engine`]: the general part: programs compiled once, processes run in sandboxes with
//!   files and pipes wired to numbered descriptors, their outputs read back.
//! - [`sphere`]: the Sphere flow on top of the engine: compile, test, judge, summarize.

pub mod builtin;
pub mod engine;
pub mod languages;
pub mod problem;
pub mod sphere;
pub mod streams;
