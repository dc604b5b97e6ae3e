//! The model cache: a loaded model saved, so that the next command on the
//! same, unchanged log reads the model back instead of loading the log
//! again.
//!
//! ```text
//! ~/.cache/clrprof/<16 hex digits>.clrprof-model
//!   "CLRPROFM" | format version u32 | key length u32 | key | payload (bincode of the model) | payload length u64 | CRC-32 of the payload u32
//! ```
//!
//! The key names the log (its canonical path, device, inode, size,
//! modification time, and a CRC-32 of its first and last 64 KB) and the
//! `clrprof` binary that wrote the entry (its size and modification time:
//! another build may lay the model out differently). An entry is used only
//! when its whole key matches and its payload's checksum is right; anything
//! else is a miss, and the log is loaded as usual (and saved anew). The
//! payload is written and read as a stream (no second copy of the model in
//! memory); a reader maps the entry, checks the payload's length and
//! checksum, then reads the model from the mapped bytes (the entry's pages
//! are the page cache's, not this process's own memory). Entries are written to a temporary file and renamed, so
//! a reader never sees half of one. The directory holds at most `CLRPROF_CACHE_MB` (default 4096) of
//! entries: after a save, the least recently used ones beyond that are
//! removed. Only files of this cache's own name pattern are ever removed.
//!
//! The folder is made readable by its owner only; a folder that another
//! user owns, or that others may write to, turns the cache off.
//!
//! Settings (environment): `CLRPROF_CACHE=off` turns the cache off;
//! `CLRPROF_CACHE_DIR` puts it elsewhere (default `$XDG_CACHE_HOME/clrprof`,
//! else `~/.cache/clrprof`); `CLRPROF_CACHE_MB` bounds it (0: off);
//! `CLRPROF_CACHE_MIN_MS` is the shortest load worth saving (default 500);
//! `CLRPROF_CACHE_TRACE=1` says on standard error what the cache did.

#![deny(missing_docs)]

pub mod child;

use bincode::Options as _;
use clrprof::model::Model;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const MAGIC: &[u8; 8] = b"CLRPROFM";
/// Bumped whenever the layout of the header changes.
const FORMAT: u32 = 1;
const SUFFIX: &str = ".clrprof-model";
/// Bytes of the log's start and end in its fingerprint.
const FINGERPRINT_BYTES: u64 = 64 << 10;

/// Where entries go and how much they may take.
pub struct Cache {
    dir: PathBuf,
    limit_bytes: u64,
    min_load: Duration,
    trace: bool,
}

/// What identifies a log and the binary that saves its model (see
/// [`Cache::key`]).
pub struct Key {
    bytes: Vec<u8>,
    name: String,
}

impl Cache {
    /// The cache the environment asks for; `None` when it is off or there
    /// is no directory for it.
    pub fn from_env() -> Option<Cache> {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        if var("CLRPROF_CACHE").is_some_and(|v| v == "off" || v == "0") {
            return None;
        }
        let mb = var("CLRPROF_CACHE_MB").and_then(|v| v.to_str()?.parse::<u64>().ok()).unwrap_or(4096);
        if mb == 0 {
            return None;
        }
        let dir = match var("CLRPROF_CACHE_DIR") {
            Some(d) => PathBuf::from(d),
            None => match var("XDG_CACHE_HOME") {
                Some(d) => PathBuf::from(d).join("clrprof"),
                None => PathBuf::from(var("HOME")?).join(".cache/clrprof"),
            },
        };
        let min_ms = var("CLRPROF_CACHE_MIN_MS").and_then(|v| v.to_str()?.parse::<u64>().ok()).unwrap_or(500);
        let cache = Cache {
            dir,
            limit_bytes: mb.saturating_mul(1 << 20),
            min_load: Duration::from_millis(min_ms),
            trace: var("CLRPROF_CACHE_TRACE").is_some_and(|v| v != "0"),
        };
        // A folder someone else owns, or others may write to, could hold
        // entries made to mislead: the cache is off then.
        if let Ok(m) = std::fs::metadata(&cache.dir) {
            let mine = std::fs::metadata("/proc/self").map_or(m.uid(), |p| p.uid());
            if m.uid() != mine || m.mode() & 0o022 != 0 {
                cache.say(format_args!("off: {} is not a folder only its owner may write to", cache.dir.display()));
                return None;
            }
        }
        Some(cache)
    }

    fn say(&self, what: std::fmt::Arguments<'_>) {
        if self.trace {
            eprintln!("clrprof cache: {what}");
        }
    }

    /// Whether a load that took `took` is worth saving.
    pub fn worth_saving(&self, took: Duration) -> bool {
        took >= self.min_load
    }

    /// The key of the log at `path`; `None` for what is not a regular file
    /// (standard input, a pipe) or cannot be read.
    pub fn key(&self, path: &Path) -> Option<Key> {
        let canonical = std::fs::canonicalize(path).ok()?;
        let mut file = File::open(&canonical).ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() {
            return None;
        }
        let mut crc = crc32fast::Hasher::new();
        let mut buf = vec![0u8; FINGERPRINT_BYTES as usize];
        let head = read_up_to(&mut file, &mut buf).ok()?;
        crc.update(&buf[..head]);
        if meta.len() > FINGERPRINT_BYTES {
            file.seek(SeekFrom::Start(meta.len().saturating_sub(FINGERPRINT_BYTES).max(FINGERPRINT_BYTES))).ok()?;
            let tail = read_up_to(&mut file, &mut buf).ok()?;
            crc.update(&buf[..tail]);
        }
        let exe = std::env::current_exe().ok().and_then(|e| std::fs::metadata(e).ok());
        let mut bytes = Vec::new();
        bytes.extend_from_slice(canonical.as_os_str().as_encoded_bytes());
        bytes.push(0);
        for v in [
            meta.dev(),
            meta.ino(),
            meta.len(),
            meta.mtime() as u64,
            meta.mtime_nsec() as u64,
            crc.finalize() as u64,
            exe.as_ref().map_or(0, |m| m.len()),
            exe.as_ref().map_or(0, |m| m.mtime() as u64),
            exe.as_ref().map_or(0, |m| m.mtime_nsec() as u64),
        ] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes.extend_from_slice(env!("CARGO_PKG_VERSION").as_bytes());
        // The entry's file name: the path alone, so that a changed log's new
        // entry replaces its old one.
        let name = format!("{:016x}{SUFFIX}", fnv1a(canonical.as_os_str().as_encoded_bytes()));
        Some(Key { bytes, name })
    }

    /// The model saved under `key`, if there is a good one.
    pub fn get(&self, key: &Key) -> Option<Model> {
        let path = self.dir.join(&key.name);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) => {
                self.say(format_args!("miss: {} ({e})", path.display()));
                return None;
            }
        };
        // Safety: a read-only map of a file this cache writes only by
        // renaming a finished file over it (never in place); a file cut
        // short by someone else's hand is refused by the length and
        // checksum, read through safe slices.
        let map = match unsafe { memmap2::Mmap::map(&file) } {
            Ok(m) => m,
            Err(e) => {
                self.say(format_args!("miss: {} ({e})", path.display()));
                return None;
            }
        };
        match decode(&map, &key.bytes) {
            Ok(model) => {
                // Recently used: eviction goes by modification time.
                let _ = File::options().append(true).open(&path).and_then(|f| f.set_modified(SystemTime::now()));
                self.say(format_args!("hit: {}", path.display()));
                Some(model)
            }
            Err(why) => {
                self.say(format_args!("miss: {} ({why})", path.display()));
                None
            }
        }
    }

    /// Saves `model` under `key` (errors only traced: the cache is an aid,
    /// never a reason for a command to fail).
    pub fn put(&self, key: &Key, model: &Model) {
        match self.write(key, model) {
            Ok(path) => {
                self.say(format_args!("stored: {}", path.display()));
                self.evict(&path);
            }
            Err(e) => self.say(format_args!("not stored: {e}")),
        }
    }

    fn write(&self, key: &Key, model: &Model) -> std::io::Result<PathBuf> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir)?;
        let path = self.dir.join(&key.name);
        // An unguessable temporary name, created exclusively and never
        // through a link (mode 0600), renamed over the entry when whole.
        let tmp = clrprof_files::temporary_beside(&path);
        let result = (|| {
            let mut f = clrprof_files::create_new(&tmp)?;
            let mut head = Vec::with_capacity(16 + key.bytes.len());
            head.extend_from_slice(MAGIC);
            head.extend_from_slice(&FORMAT.to_le_bytes());
            head.extend_from_slice(&(key.bytes.len() as u32).to_le_bytes());
            head.extend_from_slice(&key.bytes);
            f.write_all(&head)?;
            // The checksum is taken over the buffer's flushes, not over each
            // of bincode's small writes.
            let mut payload = std::io::BufWriter::with_capacity(1 << 20, Checked { inner: f, crc: crc32fast::Hasher::new(), bytes: 0 });
            options(u64::MAX).serialize_into(&mut payload, model).map_err(std::io::Error::other)?;
            let Checked { inner: mut f, crc, bytes } = payload.into_inner().map_err(|e| e.into_error())?;
            let mut tail = bytes.to_le_bytes().to_vec();
            tail.extend_from_slice(&crc.finalize().to_le_bytes());
            f.write_all(&tail)?;
            std::fs::rename(&tmp, &path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map(|()| path)
    }

    /// Removes the least recently used entries while the cache holds more
    /// than its limit (never `keep`, the entry just written).
    fn evict(&self, keep: &Path) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        let stale = SystemTime::now() - Duration::from_secs(3600);
        let mut files: Vec<(SystemTime, u64, PathBuf)> = entries
            .filter_map(|e| e.ok())
            .filter(|e| {
                let name = e.file_name();
                let Some(name) = name.to_str() else { return false };
                // A writer that died left its temporary file: gone after an
                // hour (a live writer finishes long before).
                if is_temporary_name(name) && e.metadata().and_then(|m| m.modified()).is_ok_and(|t| t < stale) {
                    let _ = std::fs::remove_file(e.path());
                }
                is_entry_name(name)
            })
            .filter_map(|e| {
                let m = e.metadata().ok()?;
                Some((m.modified().ok()?, m.len(), e.path()))
            })
            .collect();
        let mut total: u64 = files.iter().map(|f| f.1).sum();
        files.sort();
        for (_, len, path) in files {
            if total <= self.limit_bytes {
                break;
            }
            if path == keep {
                continue;
            }
            if std::fs::remove_file(&path).is_ok() {
                self.say(format_args!("evicted: {}", path.display()));
                total -= len;
            }
        }
    }
}

/// What [`load_through`] gives: the model read from the cache, or what the
/// caller's load made.
pub enum Got<T> {
    /// The model saved for this log (boxed: a model's tables are large
    /// to move around by value).
    Cached(Box<Model>),
    /// The caller's load's result (its model saved if the load took long
    /// enough).
    Loaded(T),
}

/// The model of the log at `path` through the cache the environment asks
/// for: read back when the cache holds it, else made by `load` (whose
/// model `model_of` gives) and saved when the load took at least the
/// cache's threshold. `path` is `None` for what is never cached (standard
/// input). Without a cache (off, or no folder), just `load`.
pub fn load_through<T, E>(path: Option<&Path>, load: impl FnOnce() -> Result<T, E>, model_of: impl Fn(&T) -> &Model) -> Result<Got<T>, E> {
    let cache = Cache::from_env();
    let key = match (&cache, path) {
        (Some(c), Some(p)) => c.key(p),
        _ => None,
    };
    if let (Some(cache), Some(key)) = (&cache, &key) {
        if let Some(model) = cache.get(key) {
            return Ok(Got::Cached(Box::new(model)));
        }
    }
    let start = std::time::Instant::now();
    let loaded = load()?;
    if let (Some(cache), Some(key)) = (&cache, &key) {
        if cache.worth_saving(start.elapsed()) {
            cache.put(key, model_of(&loaded));
        }
    }
    Ok(Got::Loaded(loaded))
}

/// An entry of the cache, as [`Cache::entries`] lists it.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The entry's file.
    pub file: PathBuf,
    /// The log it was saved for (`None`: a header that cannot be read).
    pub log: Option<PathBuf>,
    /// Its size in bytes.
    pub bytes: u64,
    /// When it was last written or read.
    pub last_used: SystemTime,
}

impl Cache {
    /// The cache's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The most the entries may take, in bytes.
    pub fn limit_bytes(&self) -> u64 {
        self.limit_bytes
    }

    /// The entries, the most recently used first.
    pub fn entries(&self) -> Vec<Entry> {
        let Ok(list) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        let mut v: Vec<Entry> = list
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_str().is_some_and(is_entry_name))
            .filter_map(|e| {
                let m = e.metadata().ok()?;
                Some(Entry { log: saved_for(&e.path()), file: e.path(), bytes: m.len(), last_used: m.modified().ok()? })
            })
            .collect();
        v.sort_by(|a, b| b.last_used.cmp(&a.last_used).then_with(|| a.file.cmp(&b.file)));
        v
    }

    /// Removes every entry (and writers' temporary files); gives how many
    /// entries went and their bytes. Other files in the folder stay.
    pub fn clear(&self) -> (usize, u64) {
        let (mut n, mut bytes) = (0, 0);
        let Ok(list) = std::fs::read_dir(&self.dir) else { return (0, 0) };
        for e in list.filter_map(|e| e.ok()) {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            let len = e.metadata().map_or(0, |m| m.len());
            if is_entry_name(name) {
                if std::fs::remove_file(e.path()).is_ok() {
                    n += 1;
                    bytes += len;
                }
            } else if is_temporary_name(name) {
                let _ = std::fs::remove_file(e.path());
            }
        }
        (n, bytes)
    }
}

/// The log path an entry's key names (the key starts with it, up to a NUL
/// byte).
fn saved_for(entry: &Path) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut f = File::open(entry).ok()?;
    let mut head = [0u8; 16];
    f.read_exact(&mut head).ok()?;
    if &head[..8] != MAGIC || u32::from_le_bytes([head[8], head[9], head[10], head[11]]) != FORMAT {
        return None;
    }
    let klen = u32::from_le_bytes([head[12], head[13], head[14], head[15]]) as usize;
    let mut key = vec![0u8; klen.min(1 << 16)];
    f.read_exact(&mut key).ok()?;
    let end = key.iter().position(|&b| b == 0)?;
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(&key[..end])))
}

/// Whether `name` is an entry of this cache (16 hex digits and the suffix).
fn is_entry_name(name: &str) -> bool {
    name.strip_suffix(SUFFIX).is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Whether `name` is a writer's temporary file (`.ENTRY.PID.RANDOM.tmp`,
/// as `clrprof_files::temporary_beside` names them, or `.ENTRY.PID.tmp`
/// as earlier versions did).
fn is_temporary_name(name: &str) -> bool {
    let Some(n) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else { return false };
    let n = match n.rsplit_once('.') {
        Some((rest, random)) if random.len() == 16 && random.bytes().all(|b| b.is_ascii_hexdigit()) => rest,
        _ => n,
    };
    n.rsplit_once('.')
        .is_some_and(|(entry, pid)| is_entry_name(entry) && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// A writer that counts the bytes through it and their CRC-32.
struct Checked<T> {
    inner: T,
    crc: crc32fast::Hasher,
    bytes: u64,
}

impl<W: Write> Write for Checked<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The model of an entry's bytes, or why it cannot be used.
fn decode(data: &[u8], key: &[u8]) -> Result<Model, String> {
    let cut = || "cut short".to_string();
    let u32_at = |s: &[u8]| u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
    let head = data.get(..16).ok_or_else(cut)?;
    if &head[..8] != MAGIC {
        return Err("not a clrprof model cache entry".into());
    }
    if u32_at(&head[8..12]) != FORMAT {
        return Err("another format version".into());
    }
    let klen = u32_at(&head[12..16]) as usize;
    let saved = data.get(16..16 + klen).ok_or_else(cut)?;
    if saved != key {
        return Err("saved for another log, another version of it, or another build".into());
    }
    let rest = &data[16 + klen..];
    let Some(plen) = rest.len().checked_sub(12) else { return Err(cut()) };
    let (payload, tail) = rest.split_at(plen);
    if u64::from_le_bytes(tail[..8].try_into().map_err(|_| cut())?) != plen as u64 {
        return Err("length mismatch".into());
    }
    if u32_at(&tail[8..]) != crc32fast::hash(payload) {
        return Err("checksum mismatch".into());
    }
    // The limit: no length in a damaged payload can make it allocate more
    // than the payload's size.
    options(plen as u64).deserialize(payload).map_err(|e| format!("unreadable model ({e})"))
}

/// bincode's fixed-width encoding (the fastest to read), reading at most
/// `limit` bytes.
fn options(limit: u64) -> impl bincode::Options {
    use bincode::Options;
    bincode::DefaultOptions::new().with_fixint_encoding().with_little_endian().with_limit(limit)
}

/// Reads until `buf` is full or the file ends; gives the bytes read.
fn read_up_to(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// FNV-1a, 64 bits: a stable name for a path (not a security measure: the
/// whole key is checked on reading).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names() {
        assert!(is_entry_name("0123456789abcdef.clrprof-model"));
        assert!(!is_entry_name("0123456789abcdef.clrprof-model.tmp"));
        assert!(!is_entry_name(".0123456789abcdef.clrprof-model.12.tmp"));
        assert!(!is_entry_name("notes.txt"));
        assert!(!is_entry_name("0123456789abcdeg.clrprof-model"));
        assert!(is_temporary_name(".0123456789abcdef.clrprof-model.12.tmp"));
        assert!(is_temporary_name(".0123456789abcdef.clrprof-model.12.00ff00ff00ff00ff.tmp"));
        let made = clrprof_files::temporary_beside(Path::new("/c/0123456789abcdef.clrprof-model"));
        assert!(is_temporary_name(&made.file_name().unwrap().to_string_lossy()), "{}", made.display());
        assert!(!is_temporary_name(".0123456789abcdef.clrprof-model..tmp"));
        assert!(!is_temporary_name(".notes.12.tmp"));
        assert!(!is_temporary_name("0123456789abcdef.clrprof-model.12.tmp"));
    }

    #[test]
    fn eviction_removes_the_least_recently_used_entries_only() {
        let dir = std::env::temp_dir().join(format!("clrprof-cache-evict-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create");
        let now = SystemTime::now();
        let names = ["000000000000000a", "000000000000000b", "000000000000000c", "000000000000000d"];
        for (k, n) in names.iter().enumerate() {
            let p = dir.join(format!("{n}{SUFFIX}"));
            std::fs::write(&p, [0u8; 100]).expect("write");
            // a is the oldest, d the newest; a is the entry just written.
            let f = File::options().append(true).open(&p).expect("open");
            f.set_modified(now - Duration::from_secs(100 - k as u64 * 10)).expect("set mtime");
        }
        std::fs::write(dir.join("notes.txt"), [0u8; 1000]).expect("write");
        std::fs::write(dir.join(format!(".{}{SUFFIX}.7.tmp", names[0])), [0u8; 1000]).expect("write");
        let old_tmp = dir.join(format!(".{}{SUFFIX}.8.tmp", names[1]));
        std::fs::write(&old_tmp, [0u8; 1000]).expect("write");
        File::options().append(true).open(&old_tmp).and_then(|f| f.set_modified(now - Duration::from_secs(7200))).expect("age it");
        let cache = Cache { dir: dir.clone(), limit_bytes: 250, min_load: Duration::ZERO, trace: false };
        let keep = dir.join(format!("{}{SUFFIX}", names[0]));
        cache.evict(&keep);
        let mut left: Vec<String> =
            std::fs::read_dir(&dir).expect("list").filter_map(|e| e.ok()).filter_map(|e| e.file_name().into_string().ok()).collect();
        left.sort();
        // 400 bytes of entries, 250 allowed: b and c (the oldest after a,
        // which is kept) go; the other files are not entries (a writer's
        // temporary file younger than an hour, a file of someone else's),
        // but a temporary file two hours old is a dead writer's: it goes.
        let want = [
            format!(".{}{SUFFIX}.7.tmp", names[0]),
            format!("{}{SUFFIX}", names[0]),
            format!("{}{SUFFIX}", names[3]),
            "notes.txt".to_string(),
        ];
        assert_eq!(left, want);
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn decoded(e: &[u8], key: &[u8]) -> Result<Model, String> {
        decode(e, key)
    }

    #[test]
    fn damaged_entries_are_refused() {
        assert!(decoded(b"", b"k").is_err());
        assert!(decoded(b"CLRPROFM\x02\0\0\0", b"k").is_err());
        let mut e = Vec::new();
        e.extend_from_slice(MAGIC);
        e.extend_from_slice(&FORMAT.to_le_bytes());
        e.extend_from_slice(&1u32.to_le_bytes());
        e.push(b'k');
        e.extend_from_slice(b"abc");
        e.extend_from_slice(&3u64.to_le_bytes());
        e.extend_from_slice(&crc32fast::hash(b"abc").to_le_bytes());
        assert_eq!(decoded(&e, b"j").err().as_deref(), Some("saved for another log, another version of it, or another build"));
        let err = decoded(&e, b"k").err().unwrap_or_default();
        assert!(err.starts_with("unreadable model"), "{err}");
        assert_eq!(decoded(&e[..20], b"k").err().as_deref(), Some("cut short"));
        let n = e.len();
        e[n - 13] = b'x';
        assert_eq!(decoded(&e, b"k").err().as_deref(), Some("checksum mismatch"));
        e.push(0);
        assert_eq!(decoded(&e, b"k").err().as_deref(), Some("length mismatch"));
    }
}
