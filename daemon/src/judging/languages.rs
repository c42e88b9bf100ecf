//! `policies/languages.toml`: how each language is compiled and run, for submissions and
//! custom judges alike. Loaded with the policies (and reloaded with them on SIGHUP).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

/// One language.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Language {
    /// For people: `C (gcc, C17)`.
    pub name: String,
    /// Extensions (without the dot) that choose this language.
    pub extensions: Vec<String>,
    /// The source's name in `/box`.
    pub source: String,
    /// The compiler's argv, run in `/box` under the `compile` policy.
    #[serde(default)]
    pub compile: Option<Vec<String>>,
    /// What the compiler leaves for the run; absent: the run uses the source.
    #[serde(default)]
    pub output: Option<String>,
    /// The program's argv, run in `/box`.
    pub run: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// Every language, by the name clients use.
#[derive(Debug, Clone, Default)]
pub struct Languages {
    pub by_name: BTreeMap<String, Language>,
}

impl Languages {
    /// Reads and checks `path`; the error is a sentence naming what is wrong.
    pub fn load(path: &Path) -> Result<Languages, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
        Languages::parse(&text)
    }

    pub fn parse(text: &str) -> Result<Languages, String> {
        let by_name: BTreeMap<String, Language> = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut extensions = BTreeMap::new();
        for (id, language) in &by_name {
            let plain = |s: &str| !s.is_empty() && !s.contains(['/', '\0']) && s != "." && s != "..";
            if !plain(&language.source) || language.output.as_deref().is_some_and(|o| !plain(o)) {
                return Err(format!("[{id}]: source and output must be plain file names"));
            }
            if language.run.is_empty() || language.compile.as_ref().is_some_and(|c| c.is_empty()) {
                return Err(format!("[{id}]: run (and compile, when given) must not be empty"));
            }
            if language.output.is_some() && language.compile.is_none() {
                return Err(format!("[{id}]: output without compile"));
            }
            for ext in &language.extensions {
                if let Some(other) = extensions.insert(ext.clone(), id.clone()) {
                    return Err(format!("extension {ext:?} belongs to both [{other}] and [{id}]"));
                }
            }
        }
        Ok(Languages { by_name })
    }

    /// The language named `name`, or the one for `filename`'s extension.
    pub fn choose(&self, name: Option<&str>, filename: &str) -> Result<(&str, &Language), String> {
        let known = || self.by_name.keys().cloned().collect::<Vec<_>>().join(", ");
        if let Some(name) = name {
            return self
                .by_name
                .get_key_value(name)
                .map(|(k, v)| (k.as_str(), v))
                .ok_or_else(|| format!("unknown language {name:?}; segid knows: {}", known()));
        }
        let extension = Path::new(filename).extension().and_then(|e| e.to_str()).unwrap_or_default();
        self.by_name
            .iter()
            .find(|(_, l)| l.extensions.iter().any(|e| e == extension))
            .map(|(k, v)| (k.as_str(), v))
            .ok_or_else(|| format!("no language for {filename:?} (extension {extension:?}); name one of: {}", known()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_languages_parse_and_choose_by_extension() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies/languages.toml");
        let languages = Languages::load(&path).unwrap();
        for (file, id) in [("a.c", "c"), ("a.cpp", "cpp"), ("a.cc", "cpp"), ("sol.py", "python3"), ("m.rs", "rust")] {
            assert_eq!(languages.choose(None, file).unwrap().0, id, "{file}");
        }
        assert_eq!(languages.choose(Some("c"), "whatever.txt").unwrap().0, "c");
        assert!(languages.choose(None, "a.pas").unwrap_err().contains("no language"));
        assert!(languages.choose(Some("cobol"), "a.c").unwrap_err().contains("unknown language"));
    }

    #[test]
    fn bad_tables_are_refused() {
        let dup = "[a]\nname='a'\nextensions=['x']\nsource='a'\nrun=['a']\n[b]\nname='b'\nextensions=['x']\nsource='b'\nrun=['b']\n";
        assert!(Languages::parse(dup).unwrap_err().contains("both"));
        let escape = "[a]\nname='a'\nextensions=[]\nsource='../a'\nrun=['a']\n";
        assert!(Languages::parse(escape).is_err());
        let unknown = "[a]\nname='a'\nextensions=[]\nsource='a'\nrun=['a']\nflags=1\n";
        assert!(Languages::parse(unknown).is_err());
    }
}
