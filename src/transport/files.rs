//! File mode's destination: one raw file of records per stream, so the export can merge
//! streams in time order with memory independent of the number of ops.

use crate::formats::record::{self, RECORD_SIZE};
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// At most this many stream files are open at once: threads come and go, descriptors
/// must not pile up.
const MAX_OPEN: usize = 32;

pub struct StreamFiles {
    dir: PathBuf,
    open: HashMap<u32, File>,
    /// `ACL_PROF_STORAGE_LIMIT` in bytes; records beyond it are not written (and counted).
    limit: Option<u64>,
    written: u64,
    pub over_limit: bool,
}

impl StreamFiles {
    pub fn new(dir: PathBuf, limit: Option<u64>) -> Self {
        StreamFiles {
            dir,
            open: HashMap::new(),
            limit,
            written: 0,
            over_limit: false,
        }
    }

    /// The raw file of stream `s` in `dir`.
    pub fn path(dir: &Path, s: u32) -> PathBuf {
        crate::formats::raw::stream_path(dir, s)
    }

    fn file(&mut self, s: u32) -> std::io::Result<&mut File> {
        if !self.open.contains_key(&s) && self.open.len() >= MAX_OPEN {
            self.open.clear();
        }
        match self.open.entry(s) {
            std::collections::hash_map::Entry::Occupied(o) => Ok(o.into_mut()),
            std::collections::hash_map::Entry::Vacant(v) => {
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(Self::path(&self.dir, s))?;
                Ok(v.insert(f))
            }
        }
    }

    /// Writes whole records, each run of one stream with one `write()`; returns how many
    /// were written (the rest is over the storage limit), or an I/O error.
    pub fn write(&mut self, buf: &[u8]) -> std::io::Result<u64> {
        let mut n = 0;
        let mut rest = buf;
        while !rest.is_empty() {
            let s = record::get_u32(rest, record::OFF_STREAM_ID);
            let run = rest
                .chunks_exact(RECORD_SIZE)
                .take_while(|r| record::get_u32(r, record::OFF_STREAM_ID) == s)
                .count();
            let mut take = run;
            if let Some(l) = self.limit {
                let room = (l.saturating_sub(self.written) / RECORD_SIZE as u64) as usize;
                if room < take {
                    self.over_limit = true;
                    take = room;
                }
            }
            if take > 0 {
                let f = self.file(s)?;
                super::fd::quietly(super::fd::Signals::FSIZE, || {
                    f.write_all(&rest[..take * RECORD_SIZE])
                })?;
                self.written += (take * RECORD_SIZE) as u64;
                n += take as u64;
            }
            rest = &rest[run * RECORD_SIZE..];
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_limit_stops_writing_and_says_so() {
        let dir = std::env::temp_dir().join(format!("aclprof-limit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut f = StreamFiles::new(dir.clone(), Some(3 * RECORD_SIZE as u64));
        let mut buf = Vec::new();
        for i in 1..=5u64 {
            let mut r = [0u8; RECORD_SIZE];
            let op = record::OpFields {
                op_index: i,
                stream_id: (i % 2) as u32,
                ..Default::default()
            };
            record::encode(&mut r, &op, b"n", b"t");
            buf.extend_from_slice(&r);
        }
        assert_eq!(f.write(&buf).unwrap(), 3);
        assert!(f.over_limit);
        let bytes = |s| std::fs::metadata(StreamFiles::path(&dir, s)).unwrap().len();
        assert_eq!(bytes(0) + bytes(1), 3 * RECORD_SIZE as u64);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
