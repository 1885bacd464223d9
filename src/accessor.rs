//! The decode side: what every `aclprofGetOp*` accessor checks, in safe Rust over byte slices.
//!
//! docs/design.md ("Accessors", "Decoding"): each call checks the buffer length (a whole multiple of the record
//! size), the index (64-bit arithmetic) and the signature of the *one* record it reads, so a
//! read loop is O(n), not CANN's O(n^2). `op_num` checks every record. Names decode in place
//! and can be read any number of times, in any process.

use crate::error::{err, Result, ACL_ERROR_INVALID_PARAM};
use crate::formats::record::{self, View, RECORD_SIZE};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

fn check_len(len: usize) -> Result<()> {
    if len % RECORD_SIZE != 0 {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!(
                "opInfoLen {len} is not a whole multiple of the record size {RECORD_SIZE} \
                 (aclprofGetOpDescSize); read the pipe in multiples of it"
            ),
        );
    }
    Ok(())
}

fn check_signature(rec: &[u8], index: u64) -> Result<()> {
    let stored = record::get_u32(rec, 0);
    let expect = record::signature_of(rec);
    if stored != expect {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!(
                "record {index} has signature {stored:#010x}, expected {expect:#010x}: \
                 the buffer is not op data from a subscription, or it was modified or torn"
            ),
        );
    }
    Ok(())
}

/// Records a ring reader acquired in this thread and has not released: the acquire signed
/// them, from slots the producer no longer writes until they are released, so they are
/// what was signed and need not be hashed again (docs/design.md, "Decoding").
struct Held {
    lo: usize,
    hi: usize,
    /// The reader's count of releases (and detaches), and its value at the acquire.
    releases: Arc<AtomicU64>,
    at: u64,
}

thread_local! {
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// Set once any thread of the process held a ring's batch: readers of pipes and files
/// never look at [`HELD`].
static EVER_HELD: AtomicBool = AtomicBool::new(false);

/// A ring's acquire handed `batch` to this thread, signed; it is held until `releases`
/// moves on (the reader's release or detach bumps it).
pub fn hold(batch: &[u8], releases: Arc<AtomicU64>) {
    let at = releases.load(Ordering::Acquire);
    let lo = batch.as_ptr() as usize;
    let h = Held {
        lo,
        hi: lo + batch.len(),
        releases,
        at,
    };
    let _ = HELD.try_with(|c| c.try_borrow_mut().map(|mut c| *c = Some(h)));
    EVER_HELD.store(true, Ordering::Relaxed);
}

/// Whether `buf` is whole records of a batch this thread holds (see [`hold`]).
fn held(buf: &[u8]) -> bool {
    // (Relaxed: a thread sees its own store, and only its own holds count.)
    if !EVER_HELD.load(Ordering::Relaxed) {
        return false;
    }
    let a = buf.as_ptr() as usize;
    HELD.try_with(|c| {
        c.try_borrow().is_ok_and(|c| {
            c.as_ref().is_some_and(|h| {
                a >= h.lo
                    && a + buf.len() <= h.hi
                    && (a - h.lo) % RECORD_SIZE == 0
                    && h.releases.load(Ordering::Acquire) == h.at
            })
        })
    })
    .unwrap_or(false)
}

/// Number of records in `buf`, after checking every one of them (records of a batch this
/// thread holds from a ring were checked when it acquired them).
pub fn op_num(buf: &[u8]) -> Result<u32> {
    check_len(buf.len())?;
    let n = buf.len() / RECORD_SIZE;
    let n32 = u32::try_from(n).or_else(|_| {
        err(
            ACL_ERROR_INVALID_PARAM,
            format!("{n} records do not fit the uint32_t count"),
        )
    })?;
    each_verified(buf, n, false, |_, _| ()).map_err(|(_, e)| e)?;
    Ok(n32)
}

/// Verifies the records of `buf` in order and hands each to `f`, up to `max` of them. With
/// `strings`, a record's string fields must also end in a NUL inside their field (callers
/// that hand the strings out as C pointers need that).
/// Returns how many were handed over; on a bad length or a bad record, the error (after
/// the good records before it were handed over: the count is in the error's context).
pub fn each_verified<'a>(
    buf: &'a [u8],
    max: usize,
    strings: bool,
    mut f: impl FnMut(usize, View<'a>),
) -> std::result::Result<usize, (usize, crate::error::Error)> {
    check_len(buf.len()).map_err(|e| (0, e))?;
    let signed = held(buf);
    let mut n = 0;
    for rec in buf.chunks_exact(RECORD_SIZE).take(max) {
        if !signed {
            check_signature(rec, n as u64).map_err(|e| (n, e))?;
        }
        let v = View(rec.try_into().unwrap());
        if strings && (v.name().is_none() || v.op_type().is_none()) {
            let e = crate::error::Error::new(
                ACL_ERROR_INVALID_PARAM,
                format!("record {n}'s string fields are malformed"),
            );
            return Err((n, e));
        }
        f(n, v);
        n += 1;
    }
    Ok(n)
}

/// Byte offset of record `index` in a buffer of `len` bytes, after checking the length and
/// the index (64-bit arithmetic: no index wraps around).
#[inline]
pub fn locate(len: usize, index: u32) -> Result<usize> {
    check_len(len)?;
    let start = index as u64 * RECORD_SIZE as u64; // cannot overflow u64
    if start + RECORD_SIZE as u64 > len as u64 {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!(
                "index {index} is out of range: the buffer holds {} records",
                len / RECORD_SIZE
            ),
        );
    }
    Ok(start as usize)
}

/// A record whose signature was checked, and what that check found about its two strings.
#[derive(Clone, Copy, Debug)]
pub struct Checked<'a> {
    pub view: View<'a>,
    /// [`NAME_OK`] | [`TYPE_OK`]: the field's length, NUL and contents are consistent.
    strings: u8,
}

const NAME_OK: u8 = 1;
const TYPE_OK: u8 = 2;

/// The last record a thread verified: where it was, its signature, its strings' check.
#[derive(Clone, Copy)]
struct Seen {
    addr: usize,
    sig: u32,
    strings: u8,
}

thread_local! {
    /// A read loop calls several accessors on the same record; the first call verifies it
    /// (and checks its strings once), the others find the same address holding the same
    /// signature. A record written over it (the next read into the same buffer, a ring slot
    /// reused) carries another signature and is verified again; see docs/design.md
    /// ("Decoding").
    static LAST_VERIFIED: std::cell::Cell<Seen> =
        const { std::cell::Cell::new(Seen { addr: 0, sig: 0, strings: 0 }) };
}

/// The record at `index` of `buf`, if it is the one this thread verified last and still
/// carries the signature it had then: the accessors' common case, in straight-line code
/// that cannot fail or panic. `None` sends the caller to [`record`], which checks
/// everything and says what is wrong.
#[inline(always)]
pub fn cached(buf: &[u8], index: u32) -> Option<Checked<'_>> {
    if buf.len() % RECORD_SIZE != 0 {
        return None;
    }
    let off = index as usize * RECORD_SIZE; // a u32 times 512 fits a 64-bit usize
    remembered(buf.get(off..off + RECORD_SIZE)?.try_into().ok()?)
}

/// `rec` as this thread last verified it, if it is at the same address with the same
/// signature.
#[inline(always)]
fn remembered(rec: &record::Record) -> Option<Checked<'_>> {
    let last = LAST_VERIFIED.with(|l| l.get());
    let sig = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]);
    (last.addr == rec.as_ptr() as usize && last.sig == sig).then_some(Checked {
        view: View(rec),
        strings: last.strings,
    })
}

/// Checks the signature of one record.
#[inline]
pub fn verified(rec: &record::Record, index: u32) -> Result<Checked<'_>> {
    match remembered(rec) {
        Some(c) => Ok(c),
        None => verify_now(rec, index),
    }
}

#[inline(never)]
fn verify_now(rec: &record::Record, index: u32) -> Result<Checked<'_>> {
    if !held(rec) {
        check_signature(rec, index as u64)?;
    }
    let view = View(rec);
    let strings =
        (view.name().is_some() as u8 * NAME_OK) | (view.op_type().is_some() as u8 * TYPE_OK);
    LAST_VERIFIED.with(|l| {
        l.set(Seen {
            addr: rec.as_ptr() as usize,
            sig: record::get_u32(rec, 0),
            strings,
        })
    });
    Ok(Checked { view, strings })
}

/// The record at `index`, after checking the length, the index and its signature.
#[inline]
pub fn record(buf: &[u8], index: u32) -> Result<Checked<'_>> {
    let off = locate(buf.len(), index)?;
    verified(buf[off..off + RECORD_SIZE].try_into().unwrap(), index)
}

/// Which string an accessor reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Name,
    Type,
}

impl Field {
    fn what(self) -> &'static str {
        match self {
            Field::Name => "op name",
            Field::Type => "op type",
        }
    }
    fn truncated_mark(self) -> u8 {
        match self {
            Field::Name => record::MARK_NAME_TRUNCATED,
            Field::Type => record::MARK_TYPE_TRUNCATED,
        }
    }
}

/// The string as stored in the record (possibly truncated), if its verification found it
/// well formed.
#[inline(always)]
fn stored(c: Checked<'_>, field: Field) -> Option<&[u8]> {
    let (ok, s) = match field {
        Field::Name => (NAME_OK, c.view.name_checked()),
        Field::Type => (TYPE_OK, c.view.op_type_checked()),
    };
    (c.strings & ok != 0).then_some(s)
}

/// The whole string: inline, or from the producing process's side table when it was
/// truncated and this is that process.
pub fn string<'a>(c: Checked<'a>, field: Field) -> Result<std::borrow::Cow<'a, [u8]>> {
    let Some(inline) = stored(c, field) else {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!("the record's {} field is malformed", field.what()),
        );
    };
    let v = c.view;
    if v.marks() & field.truncated_mark() != 0 && v.pid() == std::process::id() {
        if let Some(full) = crate::names::lookup(v.op_index()) {
            let s = match field {
                Field::Name => full.name,
                Field::Type => full.op_type,
            };
            return Ok(std::borrow::Cow::Owned(s.to_vec()));
        }
    }
    Ok(std::borrow::Cow::Borrowed(inline))
}

/// Length of the string including its NUL, as `aclprofGetOpNameLen`/`TypeLen` report it.
pub fn string_len(c: Checked<'_>, field: Field) -> Result<usize> {
    match cached_string(c, field) {
        Some(s) => Ok(s.len() + 1),
        None => Ok(string(c, field)?.len() + 1),
    }
}

/// Copies the string and its NUL into `out`. A buffer too short is an error and nothing is
/// written (CANN's behaviour since 2023-10).
pub fn copy_string(c: Checked<'_>, field: Field, out: &mut [u8]) -> Result<()> {
    let s = string(c, field)?;
    if out.len() <= s.len() {
        return short_buffer(s.len(), field, out.len());
    }
    out[..s.len()].copy_from_slice(&s);
    out[s.len()] = 0;
    Ok(())
}

/// The string of a [`cached`] record when the whole of it is inline and consistent:
/// the accessors' common case (no error to build, nothing to look up).
#[inline(always)]
pub fn cached_string(c: Checked<'_>, field: Field) -> Option<&[u8]> {
    stored(c, field).filter(|_| c.view.marks() & field.truncated_mark() == 0)
}

#[cold]
fn short_buffer(len: usize, field: Field, have: usize) -> Result<()> {
    err(
        ACL_ERROR_INVALID_PARAM,
        format!(
            "the {} needs {} bytes with its NUL but the buffer holds {have}; \
             ask aclprofGetOp{}Len first",
            field.what(),
            len + 1,
            if field == Field::Name { "Name" } else { "Type" }
        ),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::formats::record::{encode, sign, OpFields, Record};

    pub(crate) fn make(n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n * RECORD_SIZE);
        for i in 0..n {
            let mut r: Record = [0; RECORD_SIZE];
            let f = OpFields {
                model_id: 7,
                op_index: i as u64 + 1,
                start: 1000 * i as u64,
                end: 1000 * i as u64 + 10 + i as u64,
                ..Default::default()
            };
            encode(&mut r, &f, format!("op{i}").as_bytes(), b"MatMul");
            sign(&mut r);
            out.extend_from_slice(&r);
        }
        out
    }

    #[test]
    fn counts_and_reads() {
        let b = make(3);
        assert_eq!(op_num(&b).unwrap(), 3);
        assert_eq!(op_num(&[]).unwrap(), 0);
        let v = record(&b, 2).unwrap();
        assert_eq!(v.view.duration(), 12);
        assert_eq!(v.view.model_id(), 7);
        assert_eq!(string_len(record(&b, 1).unwrap(), Field::Name).unwrap(), 4);
        assert_eq!(string_len(record(&b, 1).unwrap(), Field::Type).unwrap(), 7);
        // repeatable
        for _ in 0..3 {
            let mut out = [0xAAu8; 8];
            copy_string(record(&b, 1).unwrap(), Field::Name, &mut out).unwrap();
            assert_eq!(&out[..4], b"op1\0");
            assert_eq!(out[4], 0xAA, "nothing written past the NUL");
        }
    }

    /// Every kind of bad input gets CANN's answer (docs/design.md, "Accessors").
    #[test]
    fn bad_inputs() {
        let b = make(2);
        // length not a multiple
        assert_eq!(op_num(&b[..511]).unwrap_err().code, ACL_ERROR_INVALID_PARAM);
        assert_eq!(
            record(&b[..1000], 0).unwrap_err().code,
            ACL_ERROR_INVALID_PARAM
        );
        // index out of range, including values that wrap in 32-bit arithmetic
        for idx in [2u32, 59652323, 8388607, 8388608, u32::MAX] {
            assert_eq!(
                record(&b, idx).unwrap_err().code,
                ACL_ERROR_INVALID_PARAM,
                "index {idx}"
            );
        }
        // a corrupt record: op_num fails, accessors on the other record still work (O(1))
        let mut c = b.clone();
        c[RECORD_SIZE + 100] ^= 1;
        assert!(op_num(&c).is_err());
        assert!(record(&c, 1).is_err());
        assert!(record(&c, 0).is_ok());
        // short destination: error, nothing written
        let mut out = [0x55u8; 3];
        assert!(copy_string(record(&b, 0).unwrap(), Field::Name, &mut out).is_err());
        assert_eq!(out, [0x55; 3]);
        let mut out = [0x55u8; 0];
        assert!(copy_string(record(&b, 0).unwrap(), Field::Name, &mut out).is_err());
    }

    #[test]
    fn a_record_written_over_a_verified_one_is_checked_again() {
        let mut b = make(2);
        assert!(record(&b, 0).is_ok());
        // Another record lands at the same address (a new read into the same buffer): it
        // carries its own signature, so it is verified again.
        let (first, second) = b.split_at_mut(RECORD_SIZE);
        first.copy_from_slice(second);
        assert!(record(&b, 0).is_ok());
        // ... and a torn one (the new record's head, the old one's tail) fails.
        let fresh = make(3);
        b[..100].copy_from_slice(&fresh[2 * RECORD_SIZE..2 * RECORD_SIZE + 100]);
        assert!(record(&b, 0).is_err());
        // A corrupt record at another address is always caught.
        let mut c = make(1);
        c[300] ^= 1;
        assert!(record(&c, 0).is_err());
    }

    #[test]
    fn the_cache_answers_only_for_the_record_verified_last_and_keeps_its_string_checks() {
        let mut b = make(2);
        // A NUL inside the name, re-signed: the record verifies, its name does not.
        b[record::OFF_NAME + 1] = 0;
        sign(&mut b[..RECORD_SIZE]);
        let c = record(&b, 0).unwrap();
        assert_eq!(c.view.model_id(), 7);
        for _ in 0..2 {
            assert!(string_len(c, Field::Name).is_err());
            assert_eq!(string_len(c, Field::Type).unwrap(), 7);
        }
        let hit = cached(&b, 0).expect("the record just verified");
        assert!(
            cached_string(hit, Field::Name).is_none(),
            "the name's check is kept"
        );
        assert_eq!(cached_string(hit, Field::Type), Some(&b"MatMul"[..]));
        // Another index, another buffer with the same bytes, or a bad length: no answer.
        assert!(cached(&b, 1).is_none());
        let copy = b.clone();
        assert!(cached(&copy, 0).is_none());
        assert!(cached(&b[..RECORD_SIZE + 1], 0).is_none());
        assert!(cached(&b, u32::MAX).is_none());
        // A new record written over it carries another signature: no answer until verified.
        let fresh = make(3);
        b[..RECORD_SIZE].copy_from_slice(&fresh[2 * RECORD_SIZE..]);
        assert!(cached(&b, 0).is_none());
        assert_eq!(record(&b, 0).unwrap().view.op_index(), 3);
        assert!(cached(&b, 0).is_some());
    }

    #[test]
    fn truncated_names_are_whole_in_the_producing_process() {
        let long = "x".repeat(300);
        let mut r: Record = [0; RECORD_SIZE];
        let f = OpFields {
            op_index: u64::MAX - 5,
            pid: std::process::id(),
            ..Default::default()
        };
        encode(&mut r, &f, long.as_bytes(), b"Add");
        sign(&mut r);
        // not remembered: the inline, truncated text
        assert_eq!(
            string_len(record(&r, 0).unwrap(), Field::Name).unwrap(),
            257
        );
        crate::names::remember(f.op_index, long.as_bytes(), b"Add");
        assert_eq!(
            string_len(record(&r, 0).unwrap(), Field::Name).unwrap(),
            301
        );
        let mut out = vec![0u8; 301];
        copy_string(record(&r, 0).unwrap(), Field::Name, &mut out).unwrap();
        assert_eq!(&out[..300], long.as_bytes());
        // another process (pid differs): inline text
        let mut r2 = r;
        r2[record::OFF_PID..record::OFF_PID + 4]
            .copy_from_slice(&(std::process::id() ^ 1).to_le_bytes());
        sign(&mut r2);
        assert_eq!(
            string_len(record(&r2, 0).unwrap(), Field::Name).unwrap(),
            257
        );
    }
}
