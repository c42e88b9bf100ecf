//! Problem pipelines (being written).
pub mod host;
pub mod testlib;
pub mod valuation;
