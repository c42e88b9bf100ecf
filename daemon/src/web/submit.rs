//! `POST /evaluate`: the multipart form read and checked (decisions 10, 14), the repository
//! fetched at its commit, and the evaluation started on the same core as JSON-RPC `evaluate`:
//! the submission's fields as `/submission/<field>/<name>`, the checkout's `directory` as the
//! read-only `/problem`, and `evaluator_cmd` under `/bin/sh -c`.

use std::path::{Component, Path};
use std::sync::Arc;

use axum::extract::Multipart;
use segi_proto::run::BoxFile;
use segi_proto::{EvaluateRequest, Event, Payload, SubmissionFile};
use tokio::sync::{mpsc, oneshot};

use super::git::Source;
use super::server::{ApiError, Web};
use crate::evaluation::markers::Markers;
use crate::evaluation::request::{check_field, to_spec};
use crate::run::passed::PassedFiles;
use crate::run::{self as runner, request};

/// The form as sent.
#[derive(Debug, Default)]
struct Form {
    submission: Vec<(String, String, Vec<u8>)>,
    url: Option<String>,
    branch: Option<String>,
    depth: Option<u32>,
    commit: Option<String>,
    directory: Option<String>,
    evaluator_cmd: Option<String>,
}

/// Reads, checks and starts one evaluation; answers its id.
pub async fn evaluate(web: Arc<Web>, multipart: Multipart) -> Result<String, ApiError> {
    if web.store.live() >= web.settings.max_live {
        return Err(ApiError::too_many(format!(
            "{} evaluations are live, the most this server keeps; read or let some finish and retry",
            web.settings.max_live
        )));
    }
    let form = read_form(&web, multipart).await?;
    let missing = |name: &str| ApiError::bad(format!("{name} is required"));
    let source = Source {
        url: form.url.ok_or_else(|| missing("repository[url]"))?,
        commit: form.commit.ok_or_else(|| missing("commit_oid"))?,
        branch: form.branch,
        depth: form.depth,
    };
    let command = form.evaluator_cmd.ok_or_else(|| missing("evaluator_cmd"))?;
    let directory = normalize_directory(form.directory.as_deref().unwrap_or("."))?;
    let archive = web.git.archive(&source).await.map_err(|e| ApiError::from_git(&e))?;
    let problem =
        problem_files(&archive, &directory).map_err(|e| ApiError::bad(format!("commit {}: {e}", source.commit)))?;
    let request = EvaluateRequest {
        policy: "evaluator".into(),
        command: vec!["/bin/sh".into(), "-c".into(), command],
        submission: form
            .submission
            .into_iter()
            .map(|(field, filename, bytes)| SubmissionFile {
                field,
                filename,
                content: Some(Payload::from_bytes(&bytes)),
                fd: None,
            })
            .collect(),
        problem: Some(problem),
        limits: Default::default(),
        env: Default::default(),
    };
    let daemon = web.daemon.clone();
    let policy = daemon.policies().get("evaluator").ok_or_else(|| ApiError::internal("no evaluator policy"))?;
    let markers = Markers::fresh().map_err(ApiError::internal)?;
    let spec = to_spec(request, &mut PassedFiles::default(), &markers).map_err(ApiError::bad)?;
    let base = runner::base_plan(&daemon, &policy);
    let prepared = request::prepare(spec, policy, base).map_err(ApiError::bad)?;
    let id = new_id().map_err(ApiError::internal)?;
    web.store.create(&id);
    tokio::spawn(run(web.clone(), id.clone(), prepared));
    Ok(id)
}

/// Runs the evaluation, keeping its text and data events for the pages.
async fn run(web: Arc<Web>, id: String, prepared: request::Prepared) {
    let daemon = web.daemon.clone();
    let cancel = daemon.stop_runs.child_token();
    let slot = tokio::select! {
        slot = daemon.run_slots.clone().acquire_owned() => slot.ok(),
        _ = cancel.cancelled() => None,
    };
    let Some(slot) = slot else {
        web.store.finish(&id);
        return;
    };
    let (events, mut incoming) = mpsc::channel::<Event>(16);
    let (result_tx, result_rx) = oneshot::channel();
    let execute = runner::execute(daemon.clone(), prepared, events, cancel, result_tx);
    daemon.runs.spawn(async move {
        execute.await;
        drop(slot);
    });
    while let Some(event) = incoming.recv().await {
        if matches!(event, Event::Text { .. } | Event::Data { .. }) {
            if let Ok(raw) = serde_json::value::to_raw_value(&event) {
                web.store.push(&id, raw);
            }
        }
    }
    if let Ok(result) = result_rx.await {
        tracing::info!(
            method = "http evaluate",
            evaluation = id,
            verdict = %result.verdict,
            exit_code = result.exit_code,
            cpu_time = result.cpu_time,
            wall_time = result.wall_time,
            memory = result.memory,
            warnings = result.warnings.len(),
            message = result.message.as_deref(),
            "run"
        );
    }
    web.store.finish(&id);
}

async fn read_form(web: &Web, mut multipart: Multipart) -> Result<Form, ApiError> {
    let mut form = Form::default();
    let limits = &web.settings;
    while let Some(mut part) = multipart.next_field().await.map_err(ApiError::from_multipart)? {
        let name = part.name().unwrap_or_default().to_string();
        if let Some(field) = name.strip_prefix("submission[").and_then(|n| n.strip_suffix(']')) {
            check_field(field).map_err(ApiError::bad)?;
            if form.submission.iter().any(|(f, _, _)| f == field) {
                return Err(ApiError::bad(format!("{name} is given twice")));
            }
            if form.submission.len() >= limits.max_files {
                return Err(ApiError::too_large(format!("more than {} submission files", limits.max_files)));
            }
            let filename = match part.file_name() {
                // The client's basename; a value sent without a filename is `<field>.txt`.
                Some(path) => {
                    basename(path).ok_or_else(|| ApiError::bad(format!("{name}: filename {path:?} has no basename")))?
                }
                None => format!("{field}.txt"),
            };
            let mut bytes = Vec::new();
            while let Some(chunk) = part.chunk().await.map_err(ApiError::from_multipart)? {
                if bytes.len() + chunk.len() > limits.max_file {
                    return Err(ApiError::too_large(format!("{name} is larger than {} bytes", limits.max_file)));
                }
                bytes.extend_from_slice(&chunk);
            }
            form.submission.push((field.to_string(), filename, bytes));
            continue;
        }
        let value = part.text().await.map_err(ApiError::from_multipart)?;
        let slot = match name.as_str() {
            "repository[url]" => &mut form.url,
            "repository[branch]" => &mut form.branch,
            "commit_oid" => &mut form.commit,
            "directory" => &mut form.directory,
            "evaluator_cmd" => &mut form.evaluator_cmd,
            "repository[depth]" => {
                let depth = value.trim().parse::<u32>().ok().filter(|d| *d > 0);
                form.depth = Some(depth.ok_or_else(|| ApiError::bad("repository[depth] must be a positive integer"))?);
                continue;
            }
            other => {
                return Err(ApiError::bad(format!(
                    "unknown parameter {other:?}; expected submission[<field>], repository[url], repository[branch], \
                     repository[depth], commit_oid, directory, evaluator_cmd"
                )))
            }
        };
        if slot.is_some() {
            return Err(ApiError::bad(format!("{name} is given twice")));
        }
        *slot = Some(value);
    }
    Ok(form)
}

fn basename(path: &str) -> Option<String> {
    let name = path.rsplit(['/', '\\']).next()?;
    (!name.is_empty() && name != "." && name != ".." && !name.contains('\0')).then(|| name.to_string())
}

/// `directory` as a clean relative path ("" for the checkout's root).
fn normalize_directory(directory: &str) -> Result<String, ApiError> {
    let mut parts = Vec::new();
    for component in Path::new(directory).components() {
        match component {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::CurDir => {}
            _ => return Err(ApiError::bad(format!("directory {directory:?} must be relative, inside the repository"))),
        }
    }
    Ok(parts.join("/"))
}

/// The regular files of the archive below `directory`, relative to it.
fn problem_files(archive: &[u8], directory: &str) -> Result<Vec<BoxFile>, String> {
    let prefix = if directory.is_empty() { String::new() } else { format!("{directory}/") };
    let mut files = Vec::new();
    let mut found = directory.is_empty();
    let mut tar = tar::Archive::new(archive);
    for entry in tar.entries().map_err(|e| e.to_string())? {
        let mut entry = entry.map_err(|e| e.to_string())?;
        let path = entry.path().map_err(|e| e.to_string())?.to_string_lossy().into_owned();
        let Some(relative) = path.strip_prefix(&prefix) else { continue };
        found = true;
        if !entry.header().entry_type().is_file() || relative.is_empty() {
            continue;
        }
        let executable = entry.header().mode().map(|m| m & 0o111 != 0).unwrap_or(false);
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut bytes).map_err(|e| e.to_string())?;
        files.push(BoxFile {
            path: relative.to_string(),
            content: Some(Payload::from_bytes(&bytes)),
            fd: None,
            executable,
        });
    }
    match found {
        true => Ok(files),
        false => Err(format!("has no directory {directory:?}")),
    }
}

/// A new evaluation id: 128 random bits in hex.
fn new_id() -> Result<String, String> {
    let mut random = [0u8; 16];
    getrandom::fill(&mut random).map_err(|e| format!("the OS random source failed: {e}"))?;
    Ok(random.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basenames_and_directories() {
        assert_eq!(basename("C:\\\\x\\sol.c").as_deref(), Some("sol.c"));
        assert_eq!(basename("a/b/sol.py").as_deref(), Some("sol.py"));
        assert_eq!(basename("a/"), None);
        assert_eq!(normalize_directory("./problems/sum/").unwrap(), "problems/sum");
        assert_eq!(normalize_directory(".").unwrap(), "");
        assert!(normalize_directory("../x").is_err());
        assert!(normalize_directory("/etc").is_err());
    }
}
