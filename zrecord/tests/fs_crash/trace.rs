//! Reads what a traced process did to the files under one folder, from
//! `strace -f -qq -y -xx` output, as a list of [`Event`]s on inodes.
//!
//! Files and folders get inode numbers as the trace creates them, so an
//! event stays attached to its file across renames; the folder given as the
//! root exists before the trace starts. The reader is strict: a system call
//! that changes a traced file and that it does not know, or a string strace
//! cut short, is an error, so a new way of writing cannot pass unseen.

use std::collections::HashMap;

/// A file or folder, numbered in the order the trace made it (0 = the root).
pub(crate) type Ino = usize;

/// One completed system call that changes, or makes durable, traced files.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Event {
    /// A new folder entry for a new file or folder `ino` named `path`, in `parent`.
    Create {
        parent: Ino,
        ino: Ino,
        path: Vec<u8>,
        dir: bool,
    },
    /// The entry `from` renamed to `to` (replacing what `to` named).
    Rename {
        parent: Ino,
        from: Vec<u8>,
        to: Vec<u8>,
    },
    /// The entry `path` removed from `parent`.
    Remove { parent: Ino, path: Vec<u8> },
    /// Bytes written into a file at an offset.
    Write {
        ino: Ino,
        offset: u64,
        bytes: Vec<u8>,
    },
    /// A file's length set.
    Truncate { ino: Ino, len: u64 },
    /// `fsync`/`fdatasync` of a file (its data) or a folder (its entries).
    Sync { ino: Ino },
    /// The traced program's own note (an `open` of a path under the marker
    /// folder, which fails): what it had finished when it made the call.
    Marker(String),
}

impl Event {
    /// The file whose data the event changes, if it is a data event.
    pub(crate) fn data_ino(&self) -> Option<Ino> {
        match self {
            Event::Write { ino, .. } | Event::Truncate { ino, .. } => Some(*ino),
            _ => None,
        }
    }

    /// The folder whose entries the event changes, if it is an entry event.
    pub(crate) fn entry_parent(&self) -> Option<Ino> {
        match self {
            Event::Create { parent, .. }
            | Event::Rename { parent, .. }
            | Event::Remove { parent, .. } => Some(*parent),
            _ => None,
        }
    }
}

/// The trace's view of the files while it reads: path → inode, and the open
/// descriptors.
struct Files {
    root: Vec<u8>,
    marker: Vec<u8>,
    paths: HashMap<Vec<u8>, (Ino, bool)>,
    fds: HashMap<i64, (Ino, u64)>,
    next: Ino,
}

impl Files {
    fn traced(&self, path: &[u8]) -> bool {
        path.starts_with(&self.root)
            && (path.len() == self.root.len() || path[self.root.len()] == b'/')
    }

    fn parent(&self, path: &[u8]) -> Result<Ino, String> {
        let cut = path.iter().rposition(|&b| b == b'/').unwrap_or(0);
        self.paths
            .get(&path[..cut])
            .map(|&(ino, _)| ino)
            .ok_or_else(|| format!("no known folder holds {}", show(path)))
    }

    fn create(&mut self, path: &[u8], dir: bool) -> Result<Event, String> {
        let parent = self.parent(path)?;
        let ino = self.next;
        self.next += 1;
        self.paths.insert(path.to_vec(), (ino, dir));
        Ok(Event::Create {
            parent,
            ino,
            path: path.to_vec(),
            dir,
        })
    }

    fn rename(&mut self, from: &[u8], to: &[u8]) {
        let moved: Vec<_> = self
            .paths
            .keys()
            .filter(|p| under(p, from))
            .cloned()
            .collect();
        self.paths.retain(|p, _| !under(p, to));
        for old in moved {
            let entry = self.paths.remove(&old).expect("listed above");
            let mut new = to.to_vec();
            new.extend_from_slice(&old[from.len()..]);
            self.paths.insert(new, entry);
        }
    }
}

/// Whether `path` is `dir` or lies inside it.
pub(crate) fn under(path: &[u8], dir: &[u8]) -> bool {
    path.starts_with(dir) && (path.len() == dir.len() || path[dir.len()] == b'/')
}

/// A path for messages.
pub(crate) fn show(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

/// One argument or result of a traced call.
#[derive(Debug)]
enum Arg {
    /// A quoted string, unescaped.
    Str(Vec<u8>),
    /// A descriptor with the path `-y` prints for it.
    Fd(i64, Vec<u8>),
    /// Anything else, as printed.
    Word(String),
}

impl Arg {
    fn int(&self) -> Result<i64, String> {
        match self {
            Arg::Word(w) => w.parse().map_err(|_| format!("not a number: {w}")),
            Arg::Fd(fd, _) => Ok(*fd),
            Arg::Str(_) => Err("a string where a number belongs".into()),
        }
    }

    fn bytes(&self) -> Result<&[u8], String> {
        match self {
            Arg::Str(s) => Ok(s),
            other => Err(format!("{other:?} where a string belongs")),
        }
    }
}

/// Reads an strace log of a process that worked under `root`; `marker` is
/// the folder whose (failing) opens are [`Event::Marker`]s.
pub(crate) fn read(log: &str, root: &[u8], marker: &[u8]) -> Result<Vec<Event>, String> {
    let mut files = Files {
        root: root.to_vec(),
        marker: marker.to_vec(),
        paths: HashMap::from([(root.to_vec(), (0, true))]),
        fds: HashMap::new(),
        next: 1,
    };
    let mut unfinished: HashMap<String, String> = HashMap::new();
    let mut events = Vec::new();
    for (n, raw) in log.lines().enumerate() {
        // `-o FILE -f` starts each line with the pid; on a terminal it is `[pid N]`.
        let (pid, rest) = match raw.strip_prefix("[pid ") {
            Some(r) => {
                let end = r.find(']').ok_or("a pid without ']'")?;
                (r[..end].trim().to_string(), r[end + 1..].trim_start())
            }
            None => {
                let digits = raw.bytes().take_while(u8::is_ascii_digit).count();
                (raw[..digits].to_string(), raw[digits..].trim_start())
            }
        };
        let line = if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            unfinished.insert(pid, head.to_string());
            continue;
        } else if let Some(resumed) = rest.strip_prefix("<... ") {
            let tail = &resumed[resumed
                .find("resumed>")
                .ok_or("a resumption without 'resumed>'")?
                + "resumed>".len()..];
            let head = unfinished
                .remove(&pid)
                .ok_or_else(|| format!("line {}: a call resumed that never started", n + 1))?;
            format!("{head}{tail}")
        } else {
            rest.to_string()
        };
        if line.starts_with("---") || line.starts_with("+++") || line.is_empty() {
            continue;
        }
        let parsed = parse_call(&line).map_err(|e| format!("line {}: {e}: {raw}", n + 1))?;
        if let Some(call) = parsed {
            apply(&mut files, call, &mut events)
                .map_err(|e| format!("line {}: {e}: {raw}", n + 1))?;
        }
    }
    Ok(events)
}

/// A traced call: its name, arguments and result.
struct Call {
    name: String,
    args: Vec<Arg>,
    result: Arg,
    failed: bool,
}

fn parse_call(line: &str) -> Result<Option<Call>, String> {
    let Some(open) = line.find('(') else {
        return Ok(None);
    };
    let name = line[..open].to_string();
    let bytes = line.as_bytes();
    let mut at = open + 1;
    let mut args = Vec::new();
    loop {
        while bytes.get(at) == Some(&b' ') {
            at += 1;
        }
        if bytes.get(at) == Some(&b')') {
            at += 1;
            break;
        }
        let (arg, next) = parse_arg(line, at)?;
        args.push(arg);
        at = next;
        match bytes.get(at) {
            Some(b',') => at += 1,
            Some(b')') => {
                at += 1;
                break;
            }
            _ => return Err("an argument list that does not end".into()),
        }
    }
    let rest = line[at..].trim_start();
    let Some(result) = rest.strip_prefix("= ") else {
        return Err("a call without a result".into());
    };
    let failed = result.starts_with("-1 ");
    let (result, _) = parse_arg(result, 0)?;
    Ok(Some(Call {
        name,
        args,
        result,
        failed,
    }))
}

/// Parses one argument at `at`; returns it and the index just past it.
fn parse_arg(line: &str, at: usize) -> Result<(Arg, usize), String> {
    let b = line.as_bytes();
    if b.get(at) == Some(&b'"') {
        let (s, end) = unquote(b, at + 1, b'"')?;
        if line[end..].starts_with("...") {
            return Err("strace cut a string short (raise -s)".into());
        }
        return Ok((Arg::Str(s), end));
    }
    // A word, up to a top-level ',' or ')' (brackets and braces nest),
    // with an optional `<path>` decoration.
    let mut depth = 0i32;
    let mut i = at;
    let mut decoration = None;
    while i < b.len() {
        match b[i] {
            b'[' | b'{' | b'(' => depth += 1,
            b']' | b'}' => depth -= 1,
            b')' if depth > 0 => depth -= 1,
            b',' | b')' if depth == 0 => break,
            b'<' if depth == 0 && i > at => {
                let (path, end) = unquote(b, i + 1, b'>')?;
                decoration = Some((line[at..i].to_string(), path));
                i = end;
                continue;
            }
            b' ' if depth == 0 && line[at..i].chars().all(|c| c == '-' || c.is_ascii_digit()) => {
                // `-1 ENOENT (…)`: the rest is the error.
                return Ok((Arg::Word(line[at..i].to_string()), b.len()));
            }
            _ => {}
        }
        i += 1;
    }
    Ok(match decoration {
        Some((word, path)) => match word.parse() {
            Ok(fd) => (Arg::Fd(fd, path), i),
            Err(_) => (Arg::Word(word), i),
        },
        None => (Arg::Word(line[at..i].trim().to_string()), i),
    })
}

/// Unescapes a C string from `at` up to the closing `quote`.
fn unquote(b: &[u8], mut at: usize, quote: u8) -> Result<(Vec<u8>, usize), String> {
    let mut out = Vec::new();
    while let Some(&c) = b.get(at) {
        if c == quote {
            return Ok((out, at + 1));
        }
        if c != b'\\' {
            out.push(c);
            at += 1;
            continue;
        }
        let e = *b.get(at + 1).ok_or("an escape at the end")?;
        at += 2;
        match e {
            b'x' => {
                let hex = std::str::from_utf8(b.get(at..at + 2).ok_or("a short \\x escape")?)
                    .map_err(|_| "a bad \\x escape")?;
                out.push(u8::from_str_radix(hex, 16).map_err(|_| "a bad \\x escape")?);
                at += 2;
            }
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'0'..=b'7' => {
                let mut v = u32::from(e - b'0');
                while let Some(&d @ b'0'..=b'7') = b.get(at) {
                    v = v * 8 + u32::from(d - b'0');
                    at += 1;
                }
                out.push(u8::try_from(v).map_err(|_| "a bad octal escape")?);
            }
            other => out.push(other),
        }
    }
    Err("a string that does not end".into())
}

/// The path a call names: an absolute string, or one relative to a
/// descriptor's folder (`*at` calls).
fn path_at(dirfd: &Arg, path: &Arg) -> Result<Vec<u8>, String> {
    let path = path.bytes()?;
    if path.first() == Some(&b'/') {
        return Ok(path.to_vec());
    }
    match dirfd {
        Arg::Fd(_, dir) | Arg::Str(dir) => {
            let mut full = dir.clone();
            full.push(b'/');
            full.extend_from_slice(path);
            Ok(full)
        }
        Arg::Word(w) => Err(format!("a relative path {} against {w}", show(path))),
    }
}

fn apply(files: &mut Files, call: Call, events: &mut Vec<Event>) -> Result<(), String> {
    let a = &call.args;
    let arg = |i: usize| {
        a.get(i)
            .ok_or_else(|| format!("{} has no argument {i}", call.name))
    };
    // The traced file a descriptor argument names, if it is one.
    let fd_ino = |files: &Files, i: usize| -> Result<Option<(i64, Ino)>, String> {
        let fd = arg(i)?.int()?;
        Ok(files.fds.get(&fd).map(|&(ino, _)| (fd, ino)))
    };
    match call.name.as_str() {
        "openat" | "open" | "creat" => {
            let path = if call.name == "openat" {
                path_at(arg(0)?, arg(1)?)?
            } else {
                arg(0)?.bytes()?.to_vec()
            };
            if path.starts_with(&files.marker) {
                let note = path[files.marker.len()..].to_vec();
                events.push(Event::Marker(String::from_utf8_lossy(&note).into_owned()));
                return Ok(());
            }
            if call.failed || !files.traced(&path) {
                return Ok(());
            }
            let flags = match arg(if call.name == "openat" { 2 } else { 1 })? {
                Arg::Word(w) => w.clone(),
                other => return Err(format!("flags {other:?}")),
            };
            let fd = call.result.int()?;
            let ino = match files.paths.get(&path) {
                Some(&(ino, _)) => {
                    if flags.contains("O_TRUNC") {
                        events.push(Event::Truncate { ino, len: 0 });
                    }
                    ino
                }
                None => {
                    let event = files.create(&path, false)?;
                    let Event::Create { ino, .. } = event else {
                        unreachable!()
                    };
                    events.push(event);
                    ino
                }
            };
            files.fds.insert(fd, (ino, 0));
        }
        "mkdir" | "mkdirat" => {
            let path = if call.name == "mkdirat" {
                path_at(arg(0)?, arg(1)?)?
            } else {
                arg(0)?.bytes()?.to_vec()
            };
            if !call.failed && files.traced(&path) {
                events.push(files.create(&path, true)?);
            }
        }
        "rename" | "renameat" | "renameat2" => {
            let (from, to) = if call.name == "rename" {
                (arg(0)?.bytes()?.to_vec(), arg(1)?.bytes()?.to_vec())
            } else {
                (path_at(arg(0)?, arg(1)?)?, path_at(arg(2)?, arg(3)?)?)
            };
            if call.failed || !(files.traced(&from) || files.traced(&to)) {
                return Ok(());
            }
            if !(files.traced(&from) && files.traced(&to)) {
                return Err("a rename into or out of the traced folder".into());
            }
            let parent = files.parent(&to)?;
            files.rename(&from, &to);
            events.push(Event::Rename { parent, from, to });
        }
        "unlink" | "unlinkat" | "rmdir" => {
            let path = if call.name == "unlinkat" {
                path_at(arg(0)?, arg(1)?)?
            } else {
                arg(0)?.bytes()?.to_vec()
            };
            if !call.failed && files.traced(&path) {
                let parent = files.parent(&path)?;
                files.paths.retain(|p, _| !under(p, &path));
                events.push(Event::Remove { parent, path });
            }
        }
        "pwrite64" | "write" => {
            if call.failed {
                return Ok(());
            }
            let Some((fd, ino)) = fd_ino(files, 0)? else {
                return Ok(());
            };
            let bytes = arg(1)?.bytes()?;
            let written = usize::try_from(call.result.int()?).map_err(|e| e.to_string())?;
            let offset = if call.name == "pwrite64" {
                u64::try_from(arg(3)?.int()?).map_err(|e| e.to_string())?
            } else {
                let pos = &mut files.fds.get_mut(&fd).expect("looked up above").1;
                let at = *pos;
                *pos += written as u64;
                at
            };
            events.push(Event::Write {
                ino,
                offset,
                bytes: bytes[..written].to_vec(),
            });
        }
        "ftruncate" => {
            if let (false, Some((_, ino))) = (call.failed, fd_ino(files, 0)?) {
                let len = u64::try_from(arg(1)?.int()?).map_err(|e| e.to_string())?;
                events.push(Event::Truncate { ino, len });
            }
        }
        "fsync" | "fdatasync" => {
            if let (false, Some((_, ino))) = (call.failed, fd_ino(files, 0)?) {
                events.push(Event::Sync { ino });
            }
        }
        "lseek" => {
            if let (false, Some((fd, _))) = (call.failed, fd_ino(files, 0)?) {
                let to = u64::try_from(call.result.int()?).map_err(|e| e.to_string())?;
                files.fds.get_mut(&fd).expect("looked up above").1 = to;
            }
        }
        "close" => {
            let fd = arg(0)?.int()?;
            files.fds.remove(&fd);
        }
        "dup" | "dup2" | "dup3" | "fcntl" => {
            let dup =
                call.name != "fcntl" || matches!(arg(1)?, Arg::Word(w) if w.starts_with("F_DUPFD"));
            if dup
                && !call.failed
                && let Some((fd, _)) = fd_ino(files, 0)?
            {
                let entry = files.fds[&fd];
                files.fds.insert(call.result.int()?, entry);
            }
        }
        "truncate" | "pwritev" | "pwritev2" | "writev" | "fallocate" | "copy_file_range"
        | "sendfile" | "splice" => {
            let traced = match a.first() {
                Some(Arg::Fd(fd, _)) => files.fds.contains_key(fd),
                Some(Arg::Str(p)) => files.traced(p),
                _ => false,
            };
            if traced && !call.failed {
                return Err(format!(
                    "{} on a traced file: the reader does not know it",
                    call.name
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> String {
        s.bytes().map(|b| format!("\\x{b:02x}")).collect()
    }

    #[test]
    fn reads_the_calls_of_a_small_trace() {
        let (r, f, g) = (hex("/r"), hex("/r/a"), hex("/r/b"));
        let m = hex("/m/op/1");
        let log = format!(
            "openat(AT_FDCWD<{r}>, \"{f}\", O_RDWR|O_CREAT|O_CLOEXEC, 0666) = 3<{f}>\n\
             [pid 7] pwrite64(3<{f}>, \"\\x68\\x69\", 2, 10) = 2\n\
             [pid 7] fdatasync(3<{f}> <unfinished ...>\n\
             [pid 8] write(3<{f}>, \"\\x21\", 1) = 1\n\
             [pid 7] <... fdatasync resumed>) = 0\n\
             ftruncate(3<{f}>, 4) = 0\n\
             rename(\"{f}\", \"{g}\") = 0\n\
             openat(AT_FDCWD<{r}>, \"{m}\", O_RDONLY|O_CLOEXEC) = -1 ENOENT (No such file or directory)\n\
             unlink(\"{g}\") = 0\n"
        );
        let events = read(&log, b"/r", b"/m/").unwrap();
        assert_eq!(
            events,
            vec![
                Event::Create {
                    parent: 0,
                    ino: 1,
                    path: b"/r/a".to_vec(),
                    dir: false
                },
                Event::Write {
                    ino: 1,
                    offset: 10,
                    bytes: b"hi".to_vec()
                },
                Event::Write {
                    ino: 1,
                    offset: 0,
                    bytes: b"!".to_vec()
                },
                Event::Sync { ino: 1 },
                Event::Truncate { ino: 1, len: 4 },
                Event::Rename {
                    parent: 0,
                    from: b"/r/a".to_vec(),
                    to: b"/r/b".to_vec()
                },
                Event::Marker("op/1".into()),
                Event::Remove {
                    parent: 0,
                    path: b"/r/b".to_vec()
                },
            ]
        );
    }

    #[test]
    fn a_string_cut_short_or_an_unknown_write_is_an_error() {
        let f = hex("/r/a");
        let cut = format!(
            "openat(AT_FDCWD, \"{f}\", O_RDWR|O_CREAT, 0666) = 3<{f}>\n\
             pwrite64(3<{f}>, \"\\x68\"..., 2, 0) = 2\n"
        );
        assert!(read(&cut, b"/r", b"/m/").unwrap_err().contains("raise -s"));
        let vectored = format!(
            "openat(AT_FDCWD, \"{f}\", O_RDWR|O_CREAT, 0666) = 3<{f}>\n\
             pwritev(3<{f}>, [{{iov_base=\"\\x68\", iov_len=1}}], 1, 0) = 1\n"
        );
        assert!(
            read(&vectored, b"/r", b"/m/")
                .unwrap_err()
                .contains("pwritev")
        );
    }
}
