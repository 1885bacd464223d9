//! The raw record streams of a result directory: one file of 512-byte signed records
//! ([`super::record`]) per stream, `device_<id>/data/aclprof_ops.stream_<stream>.bin`.
//! The names, and the readers that skip (and count) what fails its signature. The writer,
//! which also bounds descriptors and the storage limit, is `transport::files`.

use super::record::{self, View, RECORD_SIZE};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// The raw file of stream `stream` in a device's `data` directory.
pub fn stream_path(data: &Path, stream: u32) -> PathBuf {
    data.join(format!("aclprof_ops.stream_{stream}.bin"))
}

/// The raw stream files of a device's `data` directory, in name order.
pub fn stream_files(data: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(data)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("aclprof_ops.stream_") && n.ends_with(".bin"))
        })
        .collect();
    v.sort();
    Ok(v)
}

/// True if the record's signature (its first word) matches its contents.
pub fn is_intact(rec: &[u8]) -> bool {
    record::get_u32(rec, 0) == record::signature_of(rec)
}

/// Reads whole records from `r`, 2048 at a time, and gives `f` each intact one; a record
/// that fails its signature, and a torn tail, are counted in `corrupt`.
pub fn each_record(
    r: &mut dyn Read,
    corrupt: &mut u64,
    f: &mut dyn FnMut(View<'_>),
) -> std::io::Result<()> {
    let mut buf = vec![0u8; RECORD_SIZE * 2048];
    let mut filled = 0;
    loop {
        let n = match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        filled += n;
        let whole = filled / RECORD_SIZE * RECORD_SIZE;
        for rec in buf[..whole].chunks_exact(RECORD_SIZE) {
            if is_intact(rec) {
                f(View(rec.try_into().unwrap()));
            } else {
                *corrupt += 1;
            }
        }
        buf.copy_within(whole..filled, 0);
        filled -= whole;
    }
    if filled > 0 {
        *corrupt += 1;
    }
    Ok(())
}

/// One stream file, read a record at a time (for merging streams in time order).
pub struct StreamReader {
    r: BufReader<File>,
    cur: Box<[u8; RECORD_SIZE]>,
}

impl StreamReader {
    pub fn open(path: &Path) -> std::io::Result<Self> {
        Ok(StreamReader {
            r: BufReader::with_capacity(256 * 1024, File::open(path)?),
            cur: Box::new([0; RECORD_SIZE]),
        })
    }

    /// The record [`StreamReader::advance`] last found.
    pub fn current(&self) -> View<'_> {
        View(&self.cur)
    }

    /// Next intact record; false at the end (a torn tail counts as corrupt).
    pub fn advance(&mut self, corrupt: &mut u64) -> bool {
        loop {
            match self.fill() {
                RECORD_SIZE if is_intact(&self.cur[..]) => return true,
                RECORD_SIZE => *corrupt += 1,
                0 => return false,
                _ => {
                    // Part of a record, then the end (or an error): a torn tail.
                    *corrupt += 1;
                    return false;
                }
            }
        }
    }

    /// Reads up to one record into `cur`; how many bytes it got (fewer only at the end of
    /// the file or at an error).
    fn fill(&mut self) -> usize {
        let mut got = 0;
        while got < RECORD_SIZE {
            match self.r.read(&mut self.cur[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        got
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::record::{encode, sign, OpFields};

    /// A stream file cut inside its last record (a process killed mid-write): the whole
    /// records are read, and the torn one is counted as corrupt, never dropped silently.
    #[test]
    fn a_torn_tail_is_counted() {
        let mut bytes = Vec::new();
        for i in 0..2u64 {
            let mut rec = [0u8; RECORD_SIZE];
            let f = OpFields {
                start: 10 * i,
                end: 10 * i + 5,
                ..Default::default()
            };
            encode(&mut rec, &f, b"op", b"T");
            sign(&mut rec);
            bytes.extend_from_slice(&rec);
        }
        let whole = bytes.len();
        bytes.extend_from_within(..100);
        let dir = std::env::temp_dir().join(format!("aclprof-raw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (len, torn) in [(whole, 0), (whole + 100, 1)] {
            let p = dir.join(format!("stream_{len}"));
            std::fs::write(&p, &bytes[..len]).unwrap();
            let mut r = StreamReader::open(&p).unwrap();
            let mut corrupt = 0;
            let mut read = 0;
            while r.advance(&mut corrupt) {
                read += 1;
            }
            assert_eq!((read, corrupt), (2, torn), "{len} bytes");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
