//! What a workspace archive holds, read from its tar headers without unpacking (the sandbox
//! unpacks it): which paths are directories and which are symlinks, so that a `sub_path` can
//! be checked before anything runs.

use std::collections::BTreeSet;

/// The directories and symlinks of an archive, by normalized relative path.
#[derive(Debug, Default)]
pub struct Inventory {
    dirs: BTreeSet<String>,
    symlinks: BTreeSet<String>,
}

impl Inventory {
    /// Reads the archive's headers; an archive tar cannot read is the request's error.
    pub fn read(archive: &[u8]) -> Result<Inventory, String> {
        let mut inventory = Inventory::default();
        let mut tar = tar::Archive::new(archive);
        let entries = tar.entries().map_err(|e| format!("the workspace is not a tar archive: {e}"))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("the workspace archive is damaged: {e}"))?;
            let path = entry.path().map_err(|e| format!("the workspace archive has a bad path: {e}"))?;
            let path = normalize(&path.to_string_lossy());
            if path.is_empty() {
                continue;
            }
            let kind = entry.header().entry_type();
            inventory.add(&path, kind.is_symlink(), kind.is_dir());
        }
        Ok(inventory)
    }

    /// For tests: `(path, is_symlink, is_dir)`.
    pub fn from_entries<'a>(entries: impl IntoIterator<Item = (&'a str, bool, bool)>) -> Inventory {
        let mut inventory = Inventory::default();
        for (path, symlink, dir) in entries {
            inventory.add(path, symlink, dir);
        }
        inventory
    }

    fn add(&mut self, path: &str, symlink: bool, dir: bool) {
        // A file's parents are directories even when the archive has no entry for them.
        let mut parent = path;
        while let Some((up, _)) = parent.rsplit_once('/') {
            self.dirs.insert(up.to_string());
            parent = up;
        }
        if symlink {
            self.symlinks.insert(path.to_string());
        } else if dir {
            self.dirs.insert(path.to_string());
        }
    }

    pub fn is_dir(&self, path: &str) -> bool {
        self.dirs.contains(path)
    }

    pub fn is_symlink(&self, path: &str) -> bool {
        self.symlinks.contains(path)
    }
}

/// `./a/b/` → `a/b`.
fn normalize(path: &str) -> String {
    path.split('/').filter(|p| !p.is_empty() && *p != ".").collect::<Vec<_>>().join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_dirs_and_symlinks_from_headers() {
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_size(2);
        header.set_mode(0o644);
        builder.append_data(&mut header, "./src/app/main.py", &b"hi"[..]).unwrap();
        let mut link = tar::Header::new_gnu();
        link.set_entry_type(tar::EntryType::Symlink);
        link.set_size(0);
        builder.append_link(&mut link, "out", "/etc").unwrap();
        let archive = builder.into_inner().unwrap();
        let inventory = Inventory::read(&archive).unwrap();
        assert!(inventory.is_dir("src") && inventory.is_dir("src/app"));
        assert!(!inventory.is_dir("src/app/main.py"));
        assert!(inventory.is_symlink("out"));
        assert!(Inventory::read(&[b'x'; 1024]).is_err());
    }
}
