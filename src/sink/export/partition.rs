//! Where one source's files go, and how a run replaces them atomically.
//!
//! Layout (Hive partitioning, one folder per input): `OUT/<table>/source=<name>/part-0.parquet`.
//! A source is written into a staging folder `OUT/_staging/<name>.<pid>/<table>/` (engines skip
//! folders starting with `_`), and only once every table of the source is complete is each
//! table's folder renamed into place (an older partition is moved aside first and removed
//! after). A failed source's staging folder is removed when its [`Staging`] is dropped (an
//! interrupted run leaves it at worst), never a half-written partition.
use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::schema::TABLES;

/// The file name of a table's data inside a partition.
pub const PART_FILE: &str = "part-0.parquet";
/// The folder under the output that holds sources being written.
pub const STAGING_DIR: &str = "_staging";

/// Keep a partition value safe in paths and globs: letters, digits, `.`, `-` and `_`.
pub fn clean(s: &str) -> String {
    let c: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let c = c.trim_start_matches('.').to_string();
    if c.is_empty() {
        "input".into()
    } else {
        c
    }
}

/// The stem of an input: file name without compression suffix and extension.
fn stem(path: &Path) -> String {
    if path.as_os_str() == "-" {
        return "stdin".into();
    }
    let mut name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for suffix in [".gz", ".zst", ".zstd"] {
        if let Some(s) = name.strip_suffix(suffix) {
            name = s.to_string();
            break;
        }
    }
    match name.rfind('.') {
        Some(i) if i > 0 => name[..i].to_string(),
        _ => name,
    }
}

/// One distinct source name per input, in order: the file's stem; inputs sharing a stem get
/// their folder's name in front (`q3-basic_capture`), and a number when still not unique.
pub fn source_names(paths: &[PathBuf]) -> Vec<String> {
    let stems: Vec<String> = paths.iter().map(|p| clean(&stem(p))).collect();
    let mut counts = std::collections::HashMap::new();
    for s in &stems {
        *counts.entry(s.clone()).or_insert(0) += 1;
    }
    let mut used = HashSet::new();
    let mut out = Vec::with_capacity(paths.len());
    for (p, s) in paths.iter().zip(&stems) {
        let mut name = s.clone();
        if counts.get(s).copied().unwrap_or(0) > 1 {
            let folder = p
                .parent()
                .and_then(|d| d.file_name())
                .map(|d| clean(&d.to_string_lossy()))
                .unwrap_or_default();
            if !folder.is_empty() {
                name = format!("{folder}_{s}");
            }
        }
        let base = name.clone();
        let mut n = 2;
        while !used.insert(name.clone()) {
            name = format!("{base}_{n}");
            n += 1;
        }
        out.push(name);
    }
    out
}

/// The partition folder of `table` for `source`.
pub fn partition_dir(out: &Path, table: &str, source: &str) -> PathBuf {
    out.join(table).join(format!("source={source}"))
}

/// Remove the output's staging folder when no source is left in it (at the end of a run,
/// once every source is committed or dropped: sources of one run share the folder).
pub fn remove_staging(out: &Path) {
    let _ = fs::remove_dir(out.join(STAGING_DIR));
}

/// A source being written: its staging folder, removed on drop unless committed.
pub struct Staging {
    out: PathBuf,
    source: String,
    dir: PathBuf,
    done: bool,
}

impl Staging {
    /// A fresh staging folder for `source` under `out` (created with one folder per table).
    pub fn new(out: &Path, source: &str) -> io::Result<Self> {
        let dir = out
            .join(STAGING_DIR)
            .join(format!("{source}.{}", std::process::id()));
        if dir.exists() {
            fs::remove_dir_all(&dir)?;
        }
        for t in TABLES {
            fs::create_dir_all(dir.join(t.name))?;
        }
        Ok(Staging {
            out: out.to_path_buf(),
            source: source.to_string(),
            dir,
            done: false,
        })
    }

    /// Where `table`'s file is written while staging.
    pub fn file(&self, table: &str) -> PathBuf {
        self.dir.join(table).join(PART_FILE)
    }

    /// Move every table's folder into place, replacing the source's older partitions.
    pub fn commit(mut self) -> io::Result<()> {
        for t in TABLES {
            let target = partition_dir(&self.out, t.name, &self.source);
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent)?;
            }
            let old = self.dir.join(format!("{}.old", t.name));
            let had_old = match fs::rename(&target, &old) {
                Ok(()) => true,
                Err(e) if e.kind() == io::ErrorKind::NotFound => false,
                Err(e) => return Err(e),
            };
            if let Err(e) = fs::rename(self.dir.join(t.name), &target) {
                // Put the old partition back rather than leave the table without one.
                if had_old {
                    let _ = fs::rename(&old, &target);
                }
                return Err(e);
            }
        }
        self.done = true;
        self.cleanup();
        Ok(())
    }

    fn cleanup(&self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            self.cleanup();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_and_clean() {
        let p = |s: &str| PathBuf::from(s);
        let names = source_names(&[
            p("captures/q3-basic/capture.pcapng"),
            p("captures/qw-basic/capture.pcapng"),
            p("demos/1on1[tron].mvd.gz"),
            p("a/x.dm_68"),
            p("a/x.dm_68"),
            p("-"),
        ]);
        assert_eq!(
            names,
            [
                "q3-basic_capture",
                "qw-basic_capture",
                "1on1_tron_",
                "a_x",
                "a_x_2",
                "stdin"
            ]
        );
    }
}
