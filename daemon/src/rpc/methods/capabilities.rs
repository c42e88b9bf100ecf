//! `capabilities`: what this host enforces, and how (see `segid --check`).

use segi_proto::jsonrpc::RpcError;
use segi_proto::Capabilities;
use serde_json::Value;

use crate::rpc::connection::Context;

pub fn apply(ctx: &Context) -> Result<Value, RpcError> {
    let host = &ctx.daemon.host;
    let caps = Capabilities {
        version: env!("CARGO_PKG_VERSION").into(),
        cgroup: host.cgroup.as_ref().map(|h| h.version()).unwrap_or("none").into(),
        cgroup_controllers: host.cgroup.as_ref().map(|h| h.controllers()).unwrap_or_default(),
        landlock_abi: host.landlock_abi,
        seccomp: host.seccomp_notify,
        user_namespaces: host.user_namespaces.is_ok(),
        fallbacks: host.fallbacks(),
        policies: ctx.daemon.policies().names(),
        methods: super::METHODS.iter().map(|m| m.to_string()).collect(),
        max_message_bytes: ctx.daemon.settings.max_message_bytes,
        max_runs: ctx.daemon.settings.max_runs,
    };
    serde_json::to_value(caps).map_err(|e| RpcError::internal(e.to_string()))
}
