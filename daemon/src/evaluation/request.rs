//! Checking an `evaluate` request (decisions 9) and turning it into a run [`Spec`]: the
//! submission fields become read-only files `/submission/<field>/<filename>` named by
//! `SUBMISSION_FILE_<FIELD>`, the problem directory a read-only `/problem` that is the
//! evaluator's working directory, and the markers go into the environment.

use std::collections::BTreeSet;
use std::path::PathBuf;

use segi_proto::EvaluateRequest;

use super::markers::Markers;
use crate::run::passed::PassedFiles;
use crate::run::request::{check_relative_path, file_bytes, Spec, SpecFile, StdoutMode};
use crate::sandbox::messages::Area;

/// Longest field name, so that the variable name stays reasonable.
const MAX_FIELD: usize = 64;
/// Variables the daemon sets itself; a request may not set them.
const RESERVED_PREFIXES: [&str; 2] = ["SUBMISSION_FILE_", "EVALUATION_DATA_"];

/// The descriptor indexes a request names.
pub fn named_fds(request: &EvaluateRequest) -> Vec<usize> {
    let problem = request.problem.iter().flatten().filter_map(|f| f.fd);
    request.submission.iter().filter_map(|f| f.fd).chain(problem).collect()
}

/// Lowercase letters, digits and `_`, starting with a letter (decisions 9).
pub fn check_field(field: &str) -> Result<(), String> {
    let mut chars = field.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && field.len() <= MAX_FIELD;
    match valid {
        true => Ok(()),
        false => Err(format!(
            "submission field {field:?} is not a valid name: use 1 to {MAX_FIELD} lowercase letters, digits and _, \
             starting with a letter (like \"source\" or \"main_file\")"
        )),
    }
}

/// A basename as the client has it: one path component.
fn check_filename(field: &str, name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 255 || name.contains(['/', '\0']) || name == "." || name == ".." {
        return Err(format!(
            "submission field {field:?}: filename {name:?} must be a basename (1 to 255 bytes, no '/' or NUL, \
             not . or ..)"
        ));
    }
    Ok(())
}

/// The request as a spec for the sandbox, with these markers.
pub fn to_spec(request: EvaluateRequest, passed: &mut PassedFiles, markers: &Markers) -> Result<Spec, String> {
    for key in request.env.keys() {
        let upper = key.to_ascii_uppercase();
        if let Some(prefix) = RESERVED_PREFIXES.iter().find(|p| upper.starts_with(*p)) {
            return Err(format!("env {key:?}: variables starting with {prefix} are set by segid for the evaluation"));
        }
    }
    let mut env = request.env;
    let mut files = Vec::new();
    let mut fields = BTreeSet::new();
    for file in request.submission {
        check_field(&file.field)?;
        if !fields.insert(file.field.clone()) {
            return Err(format!("submission field {:?} is given twice", file.field));
        }
        check_filename(&file.field, &file.filename)?;
        let what = format!("submission field {:?}", file.field);
        let bytes = file_bytes(file.content.as_ref(), file.fd, passed, &what)?;
        let path = format!("{}/{}", file.field, file.filename);
        env.insert(format!("SUBMISSION_FILE_{}", file.field.to_ascii_uppercase()), format!("/submission/{path}"));
        files.push(SpecFile { area: Area::Submission, path, bytes, executable: false });
    }
    let mut inputs = vec![Area::Submission];
    let mut cwd = PathBuf::from("/box");
    if let Some(problem) = request.problem {
        for file in problem {
            check_relative_path(&file.path, "/problem").map_err(|e| format!("problem file {e}"))?;
            let bytes = file_bytes(file.content.as_ref(), file.fd, passed, &format!("problem file {:?}", file.path))?;
            files.push(SpecFile { area: Area::Problem, path: file.path, bytes, executable: file.executable });
        }
        inputs.push(Area::Problem);
        cwd = PathBuf::from("/problem");
    }
    env.insert("EVALUATION_DATA_BEGIN".into(), markers.begin.clone());
    env.insert("EVALUATION_DATA_END".into(), markers.end.clone());
    Ok(Spec {
        command: request.command,
        limits: request.limits,
        env,
        stdin: None,
        files,
        inputs,
        cwd,
        collect: Vec::new(),
        stdout: StdoutMode::Segi { begin: markers.begin.clone(), end: markers.end.clone() },
        wiring: Default::default(),
        workspace: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names() {
        for good in ["source", "a", "main_file", "x1", "a_2_b"] {
            assert!(check_field(good).is_ok(), "{good}");
        }
        let long = "a".repeat(MAX_FIELD + 1);
        for bad in ["", "Source", "1st", "_x", "a-b", "a.b", "a b", "é", "SOURCE", &long] {
            assert!(check_field(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn filenames() {
        for good in ["solution.c", "a", ".hidden", "with space.py"] {
            assert!(check_filename("f", good).is_ok(), "{good}");
        }
        for bad in ["", ".", "..", "a/b", "/abs", "a\0b"] {
            assert!(check_filename("f", bad).is_err(), "{bad}");
        }
    }
}
