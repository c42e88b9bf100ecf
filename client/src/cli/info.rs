//! `ping` and `capabilities`: one question, one answer.

use std::fmt::Write as _;

use segi_client::Client;
use segi_proto::units::HumanSize;
use segi_proto::Capabilities;

pub async fn ping(client: &Client, json: bool) -> anyhow::Result<u8> {
    let pong = client.ping().await?;
    match json {
        true => println!("{}", serde_json::to_string(&pong)?),
        false => println!("pong (segid {})", pong.version),
    }
    Ok(0)
}

pub async fn capabilities(client: &Client, json: bool) -> anyhow::Result<u8> {
    let capabilities = client.capabilities().await?;
    match json {
        true => println!("{}", serde_json::to_string(&capabilities)?),
        false => print!("{}", table(&capabilities)),
    }
    Ok(0)
}

/// The readable form: one `name  value` row per line, fallbacks listed last.
fn table(c: &Capabilities) -> String {
    let yes_no = |on: bool| if on { "yes" } else { "no" };
    let list = |items: &[String]| match items.is_empty() {
        true => "none".to_owned(),
        false => items.join(", "),
    };
    let cgroup = match c.cgroup_controllers.is_empty() {
        true => c.cgroup.clone(),
        false => format!("{} ({})", c.cgroup, c.cgroup_controllers.join(", ")),
    };
    let landlock = match c.landlock_abi {
        0 => "unavailable".to_owned(),
        abi => format!("ABI {abi}"),
    };
    let rows = [
        ("version", c.version.clone()),
        ("cgroup", cgroup),
        ("landlock", landlock),
        ("seccomp", yes_no(c.seccomp).to_owned()),
        ("user namespaces", yes_no(c.user_namespaces).to_owned()),
        ("policies", list(&c.policies)),
        ("methods", list(&c.methods)),
        ("max message size", HumanSize(c.max_message_bytes as u64).to_string()),
        ("max runs", c.max_runs.to_string()),
    ];
    let mut out = String::new();
    for (name, value) in rows {
        let _ = writeln!(out, "{name:<18} {value}");
    }
    match c.fallbacks.is_empty() {
        true => out.push_str("fallbacks          none\n"),
        false => {
            out.push_str("fallbacks:\n");
            for fallback in &c.fallbacks {
                let _ = writeln!(out, "  - {fallback}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_as_a_table() {
        let c = Capabilities {
            version: "0.1.0".into(),
            cgroup: "v2".into(),
            cgroup_controllers: vec!["memory".into(), "pids".into()],
            landlock_abi: 3,
            seccomp: true,
            user_namespaces: false,
            fallbacks: vec!["processes: RLIMIT_NPROC, per user".into()],
            policies: vec!["default".into()],
            methods: vec![],
            max_message_bytes: 64 << 20,
            max_runs: 4,
        };
        assert_eq!(
            table(&c),
            "version            0.1.0\n\
             cgroup             v2 (memory, pids)\n\
             landlock           ABI 3\n\
             seccomp            yes\n\
             user namespaces    no\n\
             policies           default\n\
             methods            none\n\
             max message size   64.0MiB\n\
             max runs           4\n\
             fallbacks:\n  \
             - processes: RLIMIT_NPROC, per user\n"
        );
    }
}
