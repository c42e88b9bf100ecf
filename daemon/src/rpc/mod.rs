//! The JSON-RPC side: [`server`] accepts connections, [`connection`] frames lines and routes
//! requests, [`methods`] holds one module per method.

pub mod connection;
pub mod framing;
pub mod launch;
pub mod methods;
pub mod server;
