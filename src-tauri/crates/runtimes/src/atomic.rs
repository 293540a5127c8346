//! Replacing a runtime's JSON file safely while the runtime itself may be rewriting it.
//!
//! The runtimes write their files by writing a temp file and renaming it over the target (Claude
//! Code: `.credentials.json.tmp.<8 hex>`), older Claude Code releases without any lock (2.1.332
//! holds one of its own around its writes: [`crate::claude_lock`]). So [`update_json_object`]:
//! 1. takes our lock file (serializes Patchbay's own writers; see [`crate::lock`]);
//! 2. reads the file and applies the caller's change to the parsed object (a malformed file is
//!    [`RuntimeError::Malformed`] and nothing is written); when the change changes something and
//!    the runtime has a write lock of its own ([`UpdateOptions::runtime_lock`]), takes that too
//!    (inside ours; a write the runtime made while we waited for it is caught in 4);
//! 3. writes the result to a temp file in the same directory (created exclusively, mode 0600 or
//!    the file's own mode), fsyncs it;
//! 4. re-reads the target right before the rename and starts again from 2 when it changed;
//! 5. replaces the target. On Linux this is `renameat2(RENAME_EXCHANGE)`: atomic like a rename for
//!    every reader, but the version we replaced comes back under the temp name, so a write the
//!    runtime renamed in between our re-read and our replace is detected exactly, and its changes
//!    (relative to what we read) are merged back on top of the file as it now is and written
//!    again. Elsewhere (or on a filesystem without RENAME_EXCHANGE) a plain rename, where that
//!    window is microseconds wide and not closed;
//! 6. fsyncs the directory.
//!
//! Guaranteed: readers only ever see a complete file (ours or theirs), our change is in the file
//! at the moment we replace it, and on Linux we never drop a write that another process completed
//! before our replace. Not guaranteed, and not ours to fix: a runtime that read the file before
//! our replace and renames after it drops our change (its own unlocked read-modify-write, e.g. an
//! older Claude Code); the reconciler re-applies ours on its next pass.

use crate::claude_lock::ClaudeWriteLock;
use crate::lock::FileLock;
use crate::RuntimeError;
use serde_json::{Map, Value};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Attempts before giving up with `Busy` (each one lost a race against another writer).
const MAX_ATTEMPTS: usize = 64;

/// The permissions of the file we write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileMode {
    /// Always 0600 (credential stores).
    Private,
    /// The existing file's mode, 0600 for a new file (config files).
    PreserveOrPrivate,
}

/// How to update one file.
#[derive(Debug, Clone)]
pub struct UpdateOptions {
    pub lock_path: PathBuf,
    /// How long to wait for each lock (ours, then the runtime's).
    pub lock_timeout: Duration,
    /// The runtime's own lock directory (proper-lockfile protocol: Claude Code's
    /// `.storage-write.lock`), taken inside ours once the change changes something, so the
    /// runtime's own read-modify-write cannot interleave with ours. `None`: it takes none.
    pub runtime_lock: Option<PathBuf>,
    /// A missing file starts as `{}` (else: nothing to do, `Ok(false)`, and `mutate` is not called).
    pub create_if_missing: bool,
    pub mode: FileMode,
}

/// The lock file beside `path`: `<name>.patchbay.lock`.
pub fn lock_path_for(path: &Path) -> PathBuf {
    sibling(path, ".patchbay.lock", false)
}

/// A change to a JSON object: returns whether it changed anything.
pub type Mutation<'a> = dyn FnMut(&mut Map<String, Value>) -> Result<bool, RuntimeError> + 'a;

/// Read `path` as a JSON object. `Ok(None)` when it does not exist.
pub fn read_json_object(path: &Path) -> Result<Option<Map<String, Value>>, RuntimeError> {
    read_bytes(path)?
        .map(|bytes| parse_object(path, &bytes))
        .transpose()
}

/// Apply `mutate` to the JSON object in `path` and replace the file, as described in the module
/// docs. `mutate` returns whether it changed anything; it may run more than once (on a fresh
/// copy each time) when another writer raced us, so it must decide from what it is given.
/// Returns whether the file was replaced.
pub fn update_json_object(
    path: &Path,
    options: &UpdateOptions,
    mutate: &mut Mutation<'_>,
) -> Result<bool, RuntimeError> {
    let Some(lock) = lock_for_update(path, options)? else {
        return Ok(false);
    };
    // Declared after ours: released before it.
    let mut runtime_lock: Option<ClaudeWriteLock> = None;
    let mut seen = read_bytes(path)?;
    // Changes of writes we replaced without having seen them, to merge back.
    let mut foreign: Vec<ForeignChange> = Vec::new();
    for _ in 0..MAX_ATTEMPTS {
        let base = match &seen {
            Some(bytes) => Some(parse_object(path, bytes)?),
            None if options.create_if_missing => None,
            None => return Ok(false),
        };
        let mut object = base.clone().unwrap_or_default();
        let repaired = apply_foreign(&mut object, &foreign);
        let changed = mutate(&mut object)?;
        if !changed && !repaired {
            return Ok(false);
        }
        let (tmp, now) = stage(path, options, &lock, &mut runtime_lock, &serialize(&object))?;
        if now != seen {
            let _ = fs::remove_file(&tmp);
            seen = now;
            continue;
        }

        match replace(&tmp, path, seen.is_some())? {
            Replaced::Done => {
                sync_dir(path);
                return Ok(true);
            }
            Replaced::Raced => {
                let _ = fs::remove_file(&tmp);
                seen = read_bytes(path)?;
            }
            Replaced::Exchanged(old) => {
                let _ = fs::remove_file(&tmp);
                sync_dir(path);
                if old.as_ref() == seen.as_ref() {
                    return Ok(true);
                }
                // Someone renamed a version over the file between our re-read and our exchange:
                // we replaced it unseen. Merge its changes back on top of what is there now.
                tracing::debug!(path = %path.display(), "replaced an unseen write; merging it back");
                if let Some(theirs) = old.and_then(|b| parse_object(path, &b).ok()) {
                    foreign.extend(diff(&base.unwrap_or_default(), &theirs, &object));
                }
                seen = read_bytes(path)?;
            }
        }
    }
    Err(RuntimeError::Busy {
        what: path.display().to_string(),
        message: format!("the file kept changing under us ({MAX_ATTEMPTS} attempts)"),
    })
}

/// A change to a text file: given its text (`None`: it does not exist), the new text, or `None`
/// to leave it as it is.
pub type TextMutation<'a> = dyn FnMut(Option<&str>) -> Result<Option<String>, RuntimeError> + 'a;

/// [`update_json_object`] for a text file that is not JSON (Codex's `config.toml`): the same
/// locks, temp file (fsynced, same directory, the mode of [`UpdateOptions::mode`]), re-read
/// before the replace and directory fsync. A text file cannot be merged, so a write another
/// process renamed in between our re-read and our replace (seen on Linux through the exchange)
/// is handed to `mutate` again and our change re-applied on top of it. A failure at any step
/// leaves the file as it was and removes our temp file. Returns whether the file was replaced.
pub fn update_text_file(
    path: &Path,
    options: &UpdateOptions,
    mutate: &mut TextMutation<'_>,
) -> Result<bool, RuntimeError> {
    let Some(lock) = lock_for_update(path, options)? else {
        return Ok(false);
    };
    let mut runtime_lock: Option<ClaudeWriteLock> = None;
    // What `mutate` starts from, and what the file must still hold when we replace it (they
    // differ only after we replaced a write unseen: the file then holds our previous version).
    let mut source = read_bytes(path)?;
    let mut expected = source.clone();
    for _ in 0..MAX_ATTEMPTS {
        let text = source
            .as_deref()
            .map(|bytes| {
                std::str::from_utf8(bytes).map_err(|e| RuntimeError::Malformed {
                    path: path.to_path_buf(),
                    message: format!("not UTF-8 text: {e}"),
                })
            })
            .transpose()?;
        let Some(new_text) = mutate(text)? else {
            return Ok(false);
        };
        let (tmp, now) = stage(path, options, &lock, &mut runtime_lock, new_text.as_bytes())?;
        if now != expected {
            let _ = fs::remove_file(&tmp);
            source = now.clone();
            expected = now;
            continue;
        }
        match replace(&tmp, path, expected.is_some())? {
            Replaced::Done => {
                sync_dir(path);
                return Ok(true);
            }
            Replaced::Raced => {
                let _ = fs::remove_file(&tmp);
                source = read_bytes(path)?;
                expected = source.clone();
            }
            Replaced::Exchanged(old) => {
                let _ = fs::remove_file(&tmp);
                sync_dir(path);
                // Unreadable, what we replaced is lost to us as to everyone (as in the JSON case).
                let Some(old) = old else { return Ok(true) };
                if Some(&old) == expected.as_ref() {
                    return Ok(true);
                }
                tracing::debug!(path = %path.display(), "replaced an unseen write; applying our change on top of it");
                source = Some(old);
                expected = Some(new_text.into_bytes());
            }
        }
    }
    Err(RuntimeError::Busy {
        what: path.display().to_string(),
        message: format!("the file kept changing under us ({MAX_ATTEMPTS} attempts)"),
    })
}

/// Removes `path` when it still holds exactly `expected`, under our lock (an Undo of a file
/// Patchbay created). Whether it was removed: `false` when it holds something else or is gone.
pub fn remove_file_holding(
    path: &Path,
    lock_timeout: Duration,
    expected: &[u8],
) -> Result<bool, RuntimeError> {
    let _lock = FileLock::acquire_own(&lock_path_for(path), lock_timeout)?;
    if read_bytes(path)?.as_deref() != Some(expected) {
        return Ok(false);
    }
    fs::remove_file(path).map_err(|e| io_error(path, "cannot remove the file", e))?;
    sync_dir(path);
    Ok(true)
}

/// The first steps of both updates: `Ok(None)` when there is nothing to do (the file is missing
/// and not to be created, perhaps with no directory to put a lock file in); else the directory
/// made when creating, and our lock, held until the returned guard drops.
fn lock_for_update(path: &Path, options: &UpdateOptions) -> Result<Option<FileLock>, RuntimeError> {
    if !options.create_if_missing && !path.exists() {
        return Ok(None);
    }
    if options.create_if_missing {
        if let Some(parent) = path.parent() {
            create_private_dir(parent)?;
        }
    }
    let lock = FileLock::acquire_own(&options.lock_path, options.lock_timeout)?;
    // Under our lock no writer of ours has a temp file of `path` in flight: any there is what a
    // killed writer left (a full copy of the file, secrets included).
    sweep_stale_temps(path);
    Ok(Some(lock))
}

/// Removes the temp files [`write_temp`] made for `path` and a killed writer left behind. The
/// caller holds `path`'s lock of ours (no writer of ours has one in flight). How many went.
pub(crate) fn sweep_stale_temps(path: &Path) -> usize {
    let mut removed = 0;
    for temp in stale_temps(path) {
        match fs::remove_file(&temp) {
            Ok(()) => {
                removed += 1;
                tracing::info!(
                    "removed {}, a temp file a killed Patchbay writer left",
                    temp.display()
                )
            }
            Err(e) => tracing::warn!("cannot remove {}: {e}", temp.display()),
        }
    }
    removed
}

/// The temp files [`write_temp`] names for `path` that are there now.
pub(crate) fn stale_temps(path: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Vec::new();
    };
    let Ok(entries) = fs::read_dir(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }) else {
        return Vec::new();
    };
    let name = name.to_string_lossy();
    entries
        .flatten()
        .filter(|entry| is_temp_of(&name, &entry.file_name().to_string_lossy()))
        .map(|entry| entry.path())
        .collect()
}

/// Whether `candidate` is a temp file [`write_temp`] names for a file named `name`:
/// `[.]<name>.patchbay.<pid>.<n>.tmp`.
fn is_temp_of(name: &str, candidate: &str) -> bool {
    let unhidden = candidate
        .strip_prefix('.')
        .filter(|_| !name.starts_with('.'));
    let Some(rest) = unhidden
        .unwrap_or(candidate)
        .strip_prefix(name)
        .and_then(|r| r.strip_prefix(".patchbay."))
        .and_then(|r| r.strip_suffix(".tmp"))
    else {
        return false;
    };
    let mut numbers = rest.split('.');
    let digits = |part: Option<&str>| {
        part.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    };
    digits(numbers.next()) && digits(numbers.next()) && numbers.next().is_none()
}

/// One attempt's write: the runtime's lock taken (once, into `runtime_lock`), `bytes` written to
/// a fsynced temp file in the mode of [`UpdateOptions::mode`], then `path` re-read right before
/// the rename (the runtime may have replaced it since we read it). Returns the temp file and
/// what `path` holds now; a failed re-read removes the temp file.
fn stage(
    path: &Path,
    options: &UpdateOptions,
    ours: &FileLock,
    runtime_lock: &mut Option<ClaudeWriteLock>,
    bytes: &[u8],
) -> Result<(PathBuf, Option<Vec<u8>>), RuntimeError> {
    if let (None, Some(dir)) = (&*runtime_lock, &options.runtime_lock) {
        // Only a write takes the runtime's lock. What the runtime wrote while we waited for it,
        // the re-read below sees (and the caller starts again from it).
        *runtime_lock = Some(ClaudeWriteLock::acquire_under(
            dir,
            options.lock_timeout,
            ours,
        )?);
    }
    let mode = match options.mode {
        FileMode::Private => 0o600,
        FileMode::PreserveOrPrivate => existing_mode(path).unwrap_or(0o600),
    };
    let tmp = write_temp(path, bytes, mode)?;
    match read_bytes(path) {
        Ok(now) => Ok((tmp, now)),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// A member another writer changed in a version we replaced unseen: `top`, or `top.sub` for a
/// member of a top-level object (e.g. one `mcpOAuth` entry).
#[derive(Debug)]
struct ForeignChange {
    top: String,
    sub: Option<String>,
    /// The value in what we wrote (None: absent). The change is re-applied only while the file
    /// still holds this, i.e. nobody moved that member on since.
    ours: Option<Value>,
    theirs: Option<Value>,
}

fn diff(
    base: &Map<String, Value>,
    theirs: &Map<String, Value>,
    ours: &Map<String, Value>,
) -> Vec<ForeignChange> {
    let empty = Map::new();
    let mut changes = Vec::new();
    for top in union_keys(base, theirs) {
        let (b, t) = (base.get(&top), theirs.get(&top));
        if b == t {
            continue;
        }
        match (as_obj(b), as_obj(t)) {
            (Some(bo), Some(to)) => {
                let (bo, to) = (bo.unwrap_or(&empty), to.unwrap_or(&empty));
                let oo = ours.get(&top).and_then(Value::as_object);
                for sub in union_keys(bo, to) {
                    if bo.get(&sub) != to.get(&sub) {
                        changes.push(ForeignChange {
                            ours: oo.and_then(|o| o.get(&sub)).cloned(),
                            theirs: to.get(&sub).cloned(),
                            top: top.clone(),
                            sub: Some(sub),
                        });
                    }
                }
            }
            _ => changes.push(ForeignChange {
                ours: ours.get(&top).cloned(),
                theirs: t.cloned(),
                top,
                sub: None,
            }),
        }
    }
    changes
}

/// `Some(None)`: absent; `Some(Some(map))`: an object; `None`: another kind of value.
#[allow(clippy::option_option)]
fn as_obj(v: Option<&Value>) -> Option<Option<&Map<String, Value>>> {
    match v {
        None => Some(None),
        Some(Value::Object(o)) => Some(Some(o)),
        Some(_) => None,
    }
}

fn union_keys(a: &Map<String, Value>, b: &Map<String, Value>) -> Vec<String> {
    let mut keys: Vec<String> = a.keys().cloned().collect();
    keys.extend(b.keys().filter(|k| !a.contains_key(*k)).cloned());
    keys
}

/// Re-apply foreign changes to `object`; whether anything changed.
fn apply_foreign(object: &mut Map<String, Value>, changes: &[ForeignChange]) -> bool {
    let mut changed = false;
    for change in changes {
        let slot: &mut Map<String, Value> = match &change.sub {
            None => object,
            Some(_) if change.theirs.is_none() && !object.contains_key(&change.top) => continue,
            Some(_) => {
                let container = object
                    .entry(change.top.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                match container.as_object_mut() {
                    Some(o) => o,
                    None => continue,
                }
            }
        };
        let key = change.sub.as_ref().unwrap_or(&change.top);
        let current = slot.get(key);
        if current == change.theirs.as_ref() || current != change.ours.as_ref() {
            continue;
        }
        match &change.theirs {
            Some(v) => slot.insert(key.clone(), v.clone()),
            None => slot.remove(key),
        };
        changed = true;
    }
    changed
}

fn parse_object(path: &Path, bytes: &[u8]) -> Result<Map<String, Value>, RuntimeError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(other) => Err(RuntimeError::Malformed {
            path: path.to_path_buf(),
            message: format!(
                "expected a JSON object at the top level, found {}",
                json_kind(&other)
            ),
        }),
        Err(e) => Err(RuntimeError::Malformed {
            path: path.to_path_buf(),
            message: format!("not valid JSON: {e}"),
        }),
    }
}

pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn serialize(object: &Map<String, Value>) -> Vec<u8> {
    // A map of JSON values always serializes.
    serde_json::to_vec_pretty(object).expect("JSON values serialize")
}

fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>, RuntimeError> {
    read_bounded(path)
}

/// The most Patchbay reads of another program's file (Claude Code's `~/.claude.json`, the
/// largest, is a few MiB after years of use).
pub const READ_CAP: u64 = 64 << 20;

/// Reads another program's file (a client's config, a runtime's store) without trusting what
/// is at the path: a regular file only, checked on the opened handle (a FIFO would block the
/// read for ever, `/dev/zero` would never end), opened without blocking, at most [`READ_CAP`]
/// bytes. `Ok(None)` when it does not exist.
pub fn read_bounded(path: &Path) -> Result<Option<Vec<u8>>, RuntimeError> {
    use std::io::Read;
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A FIFO opened for reading waits for a writer unless opened non-blocking.
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = match options.open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(path, "cannot read", e)),
    };
    let meta = file
        .metadata()
        .map_err(|e| io_error(path, "cannot read", e))?;
    if !meta.is_file() {
        return Err(RuntimeError::Io {
            path: path.to_path_buf(),
            message: "cannot read: not a regular file (a directory, FIFO, socket or device)".into(),
        });
    }
    if meta.len() > READ_CAP {
        return Err(too_large(path));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(READ_CAP + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, "cannot read", e))?;
    if bytes.len() as u64 > READ_CAP {
        return Err(too_large(path));
    }
    Ok(Some(bytes))
}

/// [`read_bounded`] as UTF-8 text.
pub fn read_text_bounded(path: &Path) -> Result<Option<String>, RuntimeError> {
    read_bounded(path)?
        .map(|bytes| {
            String::from_utf8(bytes).map_err(|e| RuntimeError::Malformed {
                path: path.to_path_buf(),
                message: format!("not UTF-8 text ({e})"),
            })
        })
        .transpose()
}

fn too_large(path: &Path) -> RuntimeError {
    RuntimeError::Io {
        path: path.to_path_buf(),
        message: format!(
            "cannot read: larger than {} MiB, more than any config Patchbay reads",
            READ_CAP >> 20
        ),
    }
}

pub(crate) fn io_error(path: &Path, what: &str, e: std::io::Error) -> RuntimeError {
    RuntimeError::Io {
        path: path.to_path_buf(),
        message: format!("{what}: {e}"),
    }
}

/// `<dir>/<name><suffix>`, or `<dir>/.<name><suffix>` when `hidden`.
fn sibling(path: &Path, suffix: &str, hidden: bool) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dot = if hidden && !name.starts_with('.') {
        "."
    } else {
        ""
    };
    path.with_file_name(format!("{dot}{name}{suffix}"))
}

pub(crate) fn write_temp(path: &Path, bytes: &[u8], mode: u32) -> Result<PathBuf, RuntimeError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = sibling(
        path,
        &format!(".patchbay.{}.{n}.tmp", std::process::id()),
        true,
    );
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let result = (|| {
        let mut file = options.open(&tmp)?;
        file.write_all(bytes)?;
        // The file's own mode only once the bytes are in: a kill before this leaves a copy
        // nobody else can read (and the next write removes it: `sweep_stale_temps`).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(fs::Permissions::from_mode(mode))?;
        }
        #[cfg(not(unix))]
        let _ = mode;
        file.sync_all()
    })();
    match result {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(io_error(&tmp, "cannot write the temp file", e))
        }
    }
}

#[cfg(unix)]
fn existing_mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn existing_mode(_path: &Path) -> Option<u32> {
    None
}

pub(crate) fn create_private_dir(dir: &Path) -> Result<(), RuntimeError> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .map_err(|e| io_error(dir, "cannot create the directory", e))
}

enum Replaced {
    /// Renamed over the target (or created it).
    Done,
    /// Exchanged with the target; this is what the target held (now gone).
    // Only Linux's renameat2 exchanges or notices a race; elsewhere a plain rename is all there is.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Exchanged(Option<Vec<u8>>),
    /// The target appeared or vanished since our re-read: start again.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Raced,
}

fn replace(tmp: &Path, path: &Path, target_exists: bool) -> Result<Replaced, RuntimeError> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        use rustix::io::Errno;
        let flags = if target_exists {
            RenameFlags::EXCHANGE
        } else {
            RenameFlags::NOREPLACE
        };
        match renameat_with(CWD, tmp, CWD, path, flags) {
            Ok(()) if target_exists => return Ok(Replaced::Exchanged(fs::read(tmp).ok())),
            Ok(()) => return Ok(Replaced::Done),
            Err(Errno::EXIST) if !target_exists => return Ok(Replaced::Raced),
            Err(Errno::NOENT) if target_exists && tmp.exists() => return Ok(Replaced::Raced),
            // The filesystem (or kernel) cannot exchange: a plain rename.
            Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {}
            Err(e) => {
                let _ = fs::remove_file(tmp);
                return Err(io_error(path, "cannot replace the file", e.into()));
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = target_exists;
    match fs::rename(tmp, path) {
        Ok(()) => Ok(Replaced::Done),
        Err(e) => {
            let _ = fs::remove_file(tmp);
            Err(io_error(
                path,
                "cannot rename the temp file over the file",
                e,
            ))
        }
    }
}

fn sync_dir(path: &Path) {
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Err(e) = fs::File::open(dir).and_then(|d| d.sync_all()) {
            tracing::warn!(dir = %dir.display(), "cannot fsync the directory: {e}");
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn foreign_changes_merge_back_unless_moved_on() {
        let base = obj(json!({"a": 1, "mcpOAuth": {"x": 1}}));
        let ours = obj(json!({"a": 1, "mcpOAuth": {"x": 1, "pb": 2}}));
        let theirs = obj(json!({"a": 1, "mcpOAuth": {"x": 1, "cc": 3}, "new": true}));
        let changes = diff(&base, &theirs, &ours);
        // What is there now: ours, and someone moved `a` on.
        let mut now = obj(json!({"a": 9, "mcpOAuth": {"x": 1, "pb": 2}}));
        assert!(apply_foreign(&mut now, &changes));
        assert_eq!(
            Value::Object(now.clone()),
            json!({"a": 9, "mcpOAuth": {"x": 1, "pb": 2, "cc": 3}, "new": true})
        );
        assert!(!apply_foreign(&mut now, &changes), "idempotent");
    }

    #[test]
    fn a_killed_writers_temp_file_is_removed_by_the_next_write_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".credentials.json");
        fs::write(&path, "{}").unwrap();
        let stale = dir.path().join(".credentials.json.patchbay.4242.7.tmp");
        fs::write(&stale, "{\"secret\":1}").unwrap();
        let keep = [
            ".credentials.json.tmp.abcd1234", // Claude Code's own
            ".credentials.json.patchbay.x.7.tmp",
            ".credentials.json.patchbay-backup",
            "other.json.patchbay.1.2.tmp",
        ];
        for name in keep {
            fs::write(dir.path().join(name), "x").unwrap();
        }
        let options = UpdateOptions {
            lock_path: lock_path_for(&path),
            lock_timeout: Duration::from_secs(1),
            runtime_lock: None,
            create_if_missing: false,
            mode: FileMode::Private,
        };
        update_json_object(&path, &options, &mut |o| {
            o.insert("a".into(), Value::Bool(true));
            Ok(true)
        })
        .unwrap();
        assert!(!stale.exists(), "the killed writer's copy stayed");
        for name in keep {
            assert!(dir.path().join(name).exists(), "{name} was removed");
        }
        assert!(is_temp_of("mcp.json", ".mcp.json.patchbay.12.0.tmp"));
        assert!(is_temp_of("config.toml", ".config.toml.patchbay.1.22.tmp"));
        assert!(!is_temp_of("mcp.json", ".mcp.json.patchbay.12.tmp"));
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_a_device_a_directory_and_a_huge_file_are_refused_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("mcp.json");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // No writer: a blocking open would wait here for ever.
        let e = read_bounded(&fifo).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let zero = dir.path().join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = read_bounded(&zero).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let e = read_bounded(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let huge = dir.path().join("huge.json");
        fs::File::create(&huge)
            .unwrap()
            .set_len(READ_CAP + 1)
            .unwrap();
        let e = read_bounded(&huge).unwrap_err().to_string();
        assert!(e.contains("larger than 64 MiB"), "{e}");
        assert_eq!(read_bounded(&dir.path().join("none")).unwrap(), None);
        fs::write(dir.path().join("ok.json"), b"{}").unwrap();
        assert_eq!(
            read_bounded(&dir.path().join("ok.json")).unwrap(),
            Some(b"{}".to_vec())
        );
    }

    #[test]
    fn lock_path_is_a_sibling() {
        assert_eq!(
            lock_path_for(Path::new("/h/.claude/.credentials.json")),
            Path::new("/h/.claude/.credentials.json.patchbay.lock")
        );
    }
}
