//! Ponder's SQLite files (the job store, the app's chats): a schema version in
//! `PRAGMA user_version` with ordered migrations, a mark that the file is Ponder's
//! (`PRAGMA application_id`), and, for the app, a file that cannot be used moved aside instead
//! of stopping the launch.
//!
//! Files written before versions existed have version 0 and Ponder's tables: the first
//! migration is that original schema, written to be a no-op on them (`IF NOT EXISTS`).

use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};

/// What a file of one kind holds.
pub struct Schema {
    /// For messages: "job store", "chat history".
    pub name: &'static str,
    /// Written to `PRAGMA application_id`: a file with another is another program's.
    pub application_id: i32,
    /// A table every version has, to know an unversioned file of ours from a foreign one.
    pub marker_table: &'static str,
    /// Migration `i` takes the file from version `i` to `i + 1`; never edit one that shipped,
    /// add the next.
    pub migrations: &'static [&'static str],
}

#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("{0}")]
    Sql(#[from] rusqlite::Error),
    /// The file is not one this version of Ponder can use; nothing in it was changed.
    #[error("{path}: {why}")]
    Unusable { path: PathBuf, why: String },
}

/// A file that could not be used, and where it went.
#[derive(Debug, Clone, PartialEq)]
pub struct MovedAside {
    pub path: PathBuf,
    pub moved_to: PathBuf,
    pub why: String,
}

impl Schema {
    /// Opens (or creates) the file and brings it to the latest version. A file that is corrupt,
    /// another program's or from a newer Ponder is an error, and is left as it was.
    pub fn open(&self, path: &Path) -> Result<Connection, SchemaError> {
        self.open_checked(path, false)
    }

    /// `thorough`: also read every page (`PRAGMA quick_check`), as at an app's launch.
    fn open_checked(&self, path: &Path, thorough: bool) -> Result<Connection, SchemaError> {
        let conn = Connection::open_with_flags(path, OpenFlags::default())?;
        self.prepare(&conn, thorough).map_err(|e| match e {
            SchemaError::Sql(e) if is_not_a_database(&e) => {
                SchemaError::Unusable { path: path.into(), why: format!("not a readable {} ({e})", self.name) }
            }
            SchemaError::Unusable { why, .. } => SchemaError::Unusable { path: path.into(), why },
            other => other,
        })?;
        Ok(conn)
    }

    /// [`Schema::open`], except that a file it cannot use is renamed with a timestamp (with its
    /// `-wal` and `-shm` companions) and a fresh one is started: the app launches, and the old
    /// file is still there for the user to recover.
    pub fn open_or_move_aside(&self, path: &Path) -> Result<(Connection, Option<MovedAside>), SchemaError> {
        match self.open_checked(path, true) {
            Ok(conn) => Ok((conn, None)),
            Err(SchemaError::Unusable { why, .. }) => {
                let moved_to = aside_name(path, std::time::SystemTime::now());
                for suffix in ["", "-wal", "-shm"] {
                    let from = PathBuf::from(format!("{}{suffix}", path.display()));
                    if from.exists() {
                        let to = PathBuf::from(format!("{}{suffix}", moved_to.display()));
                        std::fs::rename(&from, &to).map_err(|e| SchemaError::Unusable {
                            path: path.into(),
                            why: format!("{why}; moving it aside failed: {e}"),
                        })?;
                    }
                }
                tracing::warn!("{}: {why}; moved to {} and starting afresh", path.display(), moved_to.display());
                let conn = self.open(path)?;
                Ok((conn, Some(MovedAside { path: path.into(), moved_to, why })))
            }
            Err(e) => Err(e),
        }
    }

    fn prepare(&self, conn: &Connection, thorough: bool) -> Result<(), SchemaError> {
        // The first read of the header: a file that is not SQLite fails here.
        let app_id: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
        let version: usize = conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))?.max(0) as usize;
        if thorough {
            let integrity: String = conn.pragma_query_value(None, "quick_check", |r| r.get(0))?;
            if integrity != "ok" {
                return Err(unusable(format!("the {} is damaged ({integrity})", self.name)));
            }
        }
        let tables: i64 = conn.query_row("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'", [], |r| r.get(0))?;
        let ours: i64 =
            conn.query_row("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [self.marker_table], |r| {
                r.get(0)
            })?;
        if app_id != 0 && app_id != self.application_id {
            return Err(unusable(format!("another program's database (application id {app_id:#x}), not a {}", self.name)));
        }
        if app_id == 0 && tables > 0 && ours == 0 {
            return Err(unusable(format!("another program's database, not a {}", self.name)));
        }
        let latest = self.migrations.len();
        if version > latest {
            return Err(unusable(format!(
                "written by a newer Ponder (schema version {version}; this version knows up to {latest})"
            )));
        }
        for (v, sql) in self.migrations.iter().enumerate().skip(version) {
            let tx = conn.unchecked_transaction()?;
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (v + 1) as i64)?;
            tx.commit()?;
        }
        if app_id == 0 {
            conn.pragma_update(None, "application_id", self.application_id)?;
        }
        Ok(())
    }
}

fn unusable(why: String) -> SchemaError {
    SchemaError::Unusable { path: PathBuf::new(), why }
}

fn is_not_a_database(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt))
}

/// `chat.sqlite` -> `chat.sqlite.unusable-2026-12-02T051500Z` (UTC), unique to the second.
fn aside_name(path: &Path, at: std::time::SystemTime) -> PathBuf {
    let secs = at.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    let stamp = format!("{y:04}-{m:02}-{d:02}T{:02}{:02}{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60);
    PathBuf::from(format!("{}.unusable-{stamp}", path.display()))
}

/// Days since 1970-01-01 to a (year, month, day) of the proleptic Gregorian calendar (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST: Schema = Schema {
        name: "test store",
        application_id: 0x5445_5354,
        marker_table: "notes",
        migrations: &[
            "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);",
            "ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;",
        ],
    };

    fn version(c: &Connection) -> i64 {
        c.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap()
    }

    #[test]
    fn migrations_run_in_order_once_and_keep_the_data() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.sqlite");
        // A file from before versions: version 0, the first schema, a row.
        let old = Connection::open(&p).unwrap();
        old.execute_batch(
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL); INSERT INTO notes (body) VALUES ('kept');",
        )
        .unwrap();
        drop(old);
        let c = TEST.open(&p).unwrap();
        assert_eq!(version(&c), 2);
        let row: (String, i64) = c.query_row("SELECT body, pinned FROM notes", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        assert_eq!(row, ("kept".into(), 0));
        drop(c);
        // Opening again runs nothing (the ALTER would fail a second time).
        assert_eq!(version(&TEST.open(&p).unwrap()), 2);
        // A fresh file gets every step.
        assert_eq!(version(&TEST.open(&dir.path().join("new.sqlite")).unwrap()), 2);
    }

    #[test]
    fn files_it_cannot_use_are_refused_untouched_or_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        type Make = Box<dyn Fn(&Path)>;
        let cases: [(&str, Make, &str); 4] = [
            ("garbage", Box::new(|p| std::fs::write(p, vec![0x5a; 8192]).unwrap()), "not a readable test store"),
            (
                "foreign",
                Box::new(|p| Connection::open(p).unwrap().execute_batch("CREATE TABLE photos (id INTEGER);").unwrap()),
                "another program's database",
            ),
            (
                "other-app-id",
                Box::new(|p| Connection::open(p).unwrap().pragma_update(None, "application_id", 42).unwrap()),
                "application id 0x2a",
            ),
            (
                "newer",
                Box::new(|p| {
                    let c = TEST.open(p).unwrap();
                    c.pragma_update(None, "user_version", 9).unwrap();
                }),
                "written by a newer Ponder (schema version 9",
            ),
        ];
        for (name, make, says) in cases {
            let p = dir.path().join(format!("{name}.sqlite"));
            make(&p);
            let before = std::fs::read(&p).unwrap();
            let e = TEST.open(&p).unwrap_err();
            assert!(e.to_string().contains(says) && e.to_string().contains(name), "{name}: {e}");
            assert_eq!(std::fs::read(&p).unwrap(), before, "{name}: refused files are left as they were");
            let (c, moved) = TEST.open_or_move_aside(&p).unwrap();
            let moved = moved.unwrap_or_else(|| panic!("{name} was not moved aside"));
            assert!(moved.why.contains(says), "{name}: {moved:?}");
            assert_eq!(std::fs::read(&moved.moved_to).unwrap(), before, "{name}: the old file is kept whole");
            assert!(moved.moved_to.display().to_string().contains(".unusable-20"), "{moved:?}");
            assert_eq!(version(&c), 2, "{name}: a fresh store in its place");
        }
    }

    #[test]
    fn aside_names_carry_the_utc_time() {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_764_652_500); // 2025-12-02 05:15:00 UTC
        assert_eq!(aside_name(Path::new("/d/chat.sqlite"), at), PathBuf::from("/d/chat.sqlite.unusable-2025-12-02T051500Z"));
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
