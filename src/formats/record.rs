//! The 512-byte, self-contained op record (docs/design.md, "The op record").
//!
//! ```text
//! offset size  field
//!      0    4  signature     CRC-32C register over bytes 4..512 (init 0xFFFFFFFF, no final XOR)
//!      4    4  modelId       \
//!      8    4  flag           |
//!     12    4  threadId       |
//!     16    8  opIndex        |  CANN's newest ProfOpDesc, field for field,
//!     24    8  duration       |  little-endian, times in ns
//!     32    8  start          |
//!     40    8  end            |
//!     48    8  executionTime  |
//!     56    8  cubeFops       |
//!     64    8  vectorFops     |
//!     72    4  devId         /
//!     76    4  simOp         CANN's padding; aclprof: 1 + the op's index in the simulated
//!                            model it replays, or 0
//!     80    2  typeLen       bytes of the op type stored inline (without NUL), <= 64
//!     82    2  nameLen       bytes of the op name stored inline (without NUL), <= 256
//!     84    4  nameFullLen   length of the name as reported (> nameLen when truncated)
//!     88    4  pid           process that produced the record
//!     92    4  streamId      emulated stream the op ran on
//!     96    1  version       RECORD_VERSION
//!     97    1  marks         bit 0: name truncated, bit 1: type truncated
//!     98    2  zero
//!    100    4  metaId        the op's shapes, types, formats and cost: an id in the
//!                            process's op metadata table (docs/design.md, "Op metadata"), or 0
//!    104   65  type          NUL-terminated, zero-filled
//!    169  257  name          NUL-terminated, zero-filled
//!    426   86  reserved      zero
//! ```

pub const RECORD_SIZE: usize = 512;
pub const RECORD_VERSION: u8 = 1;
pub const MAX_TYPE_LEN: usize = 64;
pub const MAX_NAME_LEN: usize = 256;

pub const OFF_SIGNATURE: usize = 0;
pub const OFF_MODEL_ID: usize = 4;
pub const OFF_FLAG: usize = 8;
pub const OFF_THREAD_ID: usize = 12;
pub const OFF_OP_INDEX: usize = 16;
pub const OFF_DURATION: usize = 24;
pub const OFF_START: usize = 32;
pub const OFF_END: usize = 40;
pub const OFF_EXEC_TIME: usize = 48;
/// CANN's cube and vector FLOP counts: zero here (an op's cost is in its metadata).
pub const OFF_CUBE_FOPS: usize = 56;
pub const OFF_VECTOR_FOPS: usize = 64;
pub const OFF_DEV_ID: usize = 72;
pub const OFF_SIM_OP: usize = 76;
pub const OFF_TYPE_LEN: usize = 80;
pub const OFF_NAME_LEN: usize = 82;
pub const OFF_NAME_FULL_LEN: usize = 84;
pub const OFF_PID: usize = 88;
pub const OFF_STREAM_ID: usize = 92;
pub const OFF_VERSION: usize = 96;
pub const OFF_MARKS: usize = 97;
/// In the header's cache line, so that an op with metadata writes no more lines.
pub const OFF_META: usize = 100;
pub const OFF_TYPE: usize = 104;
pub const OFF_NAME: usize = OFF_TYPE + MAX_TYPE_LEN + 1;
pub const OFF_RESERVED: usize = OFF_NAME + MAX_NAME_LEN + 1;

pub const MARK_NAME_TRUNCATED: u8 = 1;
pub const MARK_TYPE_TRUNCATED: u8 = 2;

/// `aclprofSubscribeOpFlag` values.
pub const FLAG_OP: u32 = 0;
pub const FLAG_OP_THREAD: u32 = 2;
pub const FLAG_NONE: u32 = 0xFF;

const _: () =
    assert!(OFF_RESERVED == 426 && OFF_RESERVED <= RECORD_SIZE && OFF_META + 4 <= OFF_TYPE);

pub type Record = [u8; RECORD_SIZE];

/// CANN's signature: the CRC-32C register over `bytes`, initial value 0xFFFFFFFF and no final
/// XOR, i.e. the bitwise NOT of the standard CRC-32C.
#[inline]
pub fn crc_register(bytes: &[u8]) -> u32 {
    crate::formats::signature::register(bytes)
}

/// Where a record's non-zero bytes can be: the header and the op type in `[4, e1)`, the
/// op name in `[s2, e2)`, both whole 8-byte words (from offset 8); the rest is zero in a
/// record built by [`encode`]. Garbage lengths give spans the signature code rejects.
#[inline]
fn spans(rec: &Record) -> (usize, usize, usize) {
    let tlen = (get_u16(rec, OFF_TYPE_LEN) as usize).min(MAX_TYPE_LEN + 1);
    let nlen = (get_u16(rec, OFF_NAME_LEN) as usize).min(MAX_NAME_LEN + 1);
    // [4, 8) is one 4-byte word, then 8-byte words: 96 header bytes, the type and its NUL.
    let e1 = 8 + (96 + tlen + 1).div_ceil(8) * 8;
    let s2 = e1.max(OFF_NAME);
    let e2 = s2 + (OFF_NAME + nlen + 1).saturating_sub(s2).div_ceil(8) * 8;
    (e1, s2, e2.min(RECORD_SIZE + 8))
}

/// The signature a record of any size should carry (CRC register over bytes `4..`), as a
/// reader checks it: every byte is hashed (see [`fresh_signature_of`] for a producer's).
#[inline]
pub fn signature_of(rec: &[u8]) -> u32 {
    match <&Record>::try_from(rec) {
        Ok(r) => crate::formats::signature::of_record(r),
        Err(_) => crc_register(&rec[4..]),
    }
}

/// The signature of a record just built by [`encode`] into a zeroed buffer.
#[inline]
pub fn fresh_signature_of(rec: &Record) -> u32 {
    crate::formats::signature::of_sparse_record(rec, spans(rec))
}

/// Signs a record just built by [`encode`] into a zeroed buffer (the bytes after its
/// strings are known to be zero, so only the header and the strings are hashed).
#[inline]
pub fn sign_fresh(rec: &mut Record) {
    let s = fresh_signature_of(rec);
    rec[..4].copy_from_slice(&s.to_le_bytes());
}

/// Writes the signature into bytes 0..4.
#[inline]
pub fn sign(rec: &mut [u8]) {
    let s = signature_of(rec);
    rec[..4].copy_from_slice(&s.to_le_bytes());
}

#[inline]
pub fn get_u16(rec: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([rec[off], rec[off + 1]])
}
#[inline]
pub fn get_u32(rec: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(rec[off..off + 4].try_into().unwrap())
}
#[inline]
pub fn get_u64(rec: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(rec[off..off + 8].try_into().unwrap())
}
#[inline]
fn put_u16(rec: &mut [u8], off: usize, v: u16) {
    rec[off..off + 2].copy_from_slice(&v.to_le_bytes());
}
#[inline]
fn put_u32(rec: &mut [u8], off: usize, v: u32) {
    rec[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
#[inline]
fn put_u64(rec: &mut [u8], off: usize, v: u64) {
    rec[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// The bytes of `s` before its first NUL (how a C string would read it).
pub fn until_nul(s: &[u8]) -> &[u8] {
    &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())]
}

/// Everything a record says about one executed op, besides its strings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpFields {
    pub model_id: u32,
    pub flag: u32,
    pub thread_id: u32,
    pub op_index: u64,
    pub start: u64,
    pub end: u64,
    pub execution_time: u64,
    pub dev_id: u32,
    pub pid: u32,
    pub stream_id: u32,
    /// A replayed op: 1 + its index in its simulated model, whose description says what the
    /// record has no field for (task type, block dims, task id); 0 for other ops.
    pub sim_op: u32,
    /// The op's id in the op metadata table (`opmeta`), or 0.
    pub meta: u32,
}

/// The longest prefix of `s` of at most `max` bytes that does not split a UTF-8 character
/// (for valid UTF-8; other bytes are cut at `max`).
pub fn truncate_at_char(s: &[u8], max: usize) -> &[u8] {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    if std::str::from_utf8(s).is_ok() {
        while end > 0 && (s[end] & 0xC0) == 0x80 {
            end -= 1;
        }
    }
    &s[..end]
}

/// Fills `rec` (which must be all zero) with `f`, `name` and `op_type`. The signature is left
/// for [`sign`], so the reporting thread does not pay for the CRC. Strings longer than the
/// inline space are truncated and marked. The strings must not contain NUL (callers pass
/// the bytes of a C string, see [`until_nul`]).
#[inline(always)]
pub fn encode(rec: &mut Record, f: &OpFields, name: &[u8], op_type: &[u8]) {
    debug_assert!(!name.contains(&0) && !op_type.contains(&0));
    encode_bytes(rec, f, name, op_type);
}

/// [`encode`] of any bytes, NULs among them included ([`Given`] checks for them after).
#[inline(always)]
fn encode_bytes(rec: &mut Record, f: &OpFields, name: &[u8], op_type: &[u8]) {
    if name.len() <= MAX_NAME_LEN && op_type.len() <= MAX_TYPE_LEN {
        // The common case, inline in the reporting path: nothing to cut.
        encode_cut(rec, f, name, op_type, name.len(), 0);
    } else {
        encode_truncating(rec, f, name, op_type);
    }
}

/// [`encode`] of strings longer than their fields: cut, and marked as cut.
#[cold]
#[inline(never)]
fn encode_truncating(rec: &mut Record, f: &OpFields, name: &[u8], op_type: &[u8]) {
    let t = truncate_at_char(op_type, MAX_TYPE_LEN);
    let n = truncate_at_char(name, MAX_NAME_LEN);
    let mut marks = 0;
    if n.len() < name.len() {
        marks |= MARK_NAME_TRUNCATED;
    }
    if t.len() < op_type.len() {
        marks |= MARK_TYPE_TRUNCATED;
    }
    encode_cut(rec, f, n, t, name.len(), marks);
}

/// [`encode`] of strings already cut to their fields (`n` of a name `name_len` bytes
/// long, `t`), with these truncation `marks`.
#[inline(always)]
fn encode_cut(rec: &mut Record, f: &OpFields, n: &[u8], t: &[u8], name_len: usize, marks: u8) {
    let name_len = u32::try_from(name_len).unwrap_or(u32::MAX);
    put_header(rec, f, t.len() as u16, n.len() as u16, name_len, marks);
    rec[OFF_TYPE..OFF_TYPE + t.len()].copy_from_slice(t);
    rec[OFF_NAME..OFF_NAME + n.len()].copy_from_slice(n);
}

/// Every field of the record before its strings (the signature is left for [`sign`]):
/// `f`'s, and the strings' lengths (as stored, and the name's whole length) and marks.
#[inline(always)]
fn put_header(rec: &mut Record, f: &OpFields, t_len: u16, n_len: u16, name_len: u32, marks: u8) {
    put_u32(rec, OFF_MODEL_ID, f.model_id);
    put_u32(rec, OFF_FLAG, f.flag);
    put_u32(rec, OFF_THREAD_ID, f.thread_id);
    put_u64(rec, OFF_OP_INDEX, f.op_index);
    put_u64(rec, OFF_DURATION, f.end.wrapping_sub(f.start));
    put_u64(rec, OFF_START, f.start);
    put_u64(rec, OFF_END, f.end);
    put_u64(rec, OFF_EXEC_TIME, f.execution_time);
    put_u32(rec, OFF_DEV_ID, f.dev_id);
    put_u32(rec, OFF_SIM_OP, f.sim_op);
    put_u32(rec, OFF_META, f.meta);
    put_u16(rec, OFF_TYPE_LEN, t_len);
    put_u16(rec, OFF_NAME_LEN, n_len);
    put_u32(rec, OFF_NAME_FULL_LEN, name_len);
    put_u32(rec, OFF_PID, f.pid);
    put_u32(rec, OFF_STREAM_ID, f.stream_id);
    rec[OFF_VERSION] = RECORD_VERSION;
    rec[OFF_MARKS] = marks;
}

/// [`encode`] into a slot that holds zeros or a record an earlier `encode_over` wrote (a
/// lane's or a ring's slot being reused): instead of clearing all 512 bytes first, only the
/// old strings' bytes past the new strings are cleared. Every other byte is a field written
/// again or padding that was never written, so the result is what [`encode`] makes in a
/// zeroed record, and fewer of the slot's cache lines are written.
#[inline(always)]
pub fn encode_over(rec: &mut Record, f: &OpFields, name: &[u8], op_type: &[u8]) {
    debug_assert!(!name.contains(&0) && !op_type.contains(&0));
    encode_bytes_over(rec, f, name, op_type);
    #[cfg(debug_assertions)]
    {
        let mut fresh = [0; RECORD_SIZE];
        encode(&mut fresh, f, name, op_type);
        fresh[..4].copy_from_slice(&rec[..4]);
        debug_assert!(
            fresh == *rec,
            "a reused slot held something encode did not write"
        );
    }
}

/// [`encode_over`] of any bytes, NULs among them included.
#[inline(always)]
fn encode_bytes_over(rec: &mut Record, f: &OpFields, name: &[u8], op_type: &[u8]) {
    let old_t = (get_u16(rec, OFF_TYPE_LEN) as usize).min(MAX_TYPE_LEN);
    let old_n = (get_u16(rec, OFF_NAME_LEN) as usize).min(MAX_NAME_LEN);
    encode_bytes(rec, f, name, op_type);
    let t = get_u16(rec, OFF_TYPE_LEN) as usize;
    let n = get_u16(rec, OFF_NAME_LEN) as usize;
    if old_t > t {
        rec[OFF_TYPE + t..OFF_TYPE + old_t].fill(0);
    }
    if old_n > n {
        rec[OFF_NAME + n..OFF_NAME + old_n].fill(0);
    }
}

/// The bytes an [`OpImage`] copies at least: the type field and a name of up to 63 bytes.
const IMAGE_MIN: usize = 128;

/// An op's strings laid out as a record holds them, prepared once when the op is registered
/// (docs/design.md, "Registered ops"): the lengths, the marks and the bytes from the type
/// field to the end of the name, cut and marked as [`encode`] would cut them. A report then
/// copies these bytes and stamps the fields that change per execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpImage {
    /// The type field (zero-filled to its `MAX_TYPE_LEN + 1` bytes), the name after it and
    /// zeros after that (see [`IMAGE_MIN`]), never past the strings' fields.
    strings: Box<[u8]>,
    type_len: u16,
    name_len: u16,
    name_full_len: u32,
    marks: u8,
    /// The whole name and type (one after the other) and the name's length, when one was
    /// cut.
    whole: Option<(Box<[u8]>, usize)>,
}

impl OpImage {
    /// The image of `name` and `op_type` (no NUL inside, as for [`encode`]).
    pub fn new(name: &[u8], op_type: &[u8]) -> OpImage {
        let mut rec = [0u8; RECORD_SIZE];
        encode(&mut rec, &OpFields::default(), name, op_type);
        let name_len = get_u16(&rec, OFF_NAME_LEN);
        // Zeros after the name, to a whole number of 32 bytes (at least IMAGE_MIN), so that
        // the common image is copied in one fixed-size move, and clears what it covers.
        let used = OFF_NAME + name_len as usize - OFF_TYPE;
        let copied = used.div_ceil(32).max(IMAGE_MIN / 32) * 32;
        OpImage {
            strings: rec[OFF_TYPE..OFF_TYPE + copied.min(OFF_RESERVED - OFF_TYPE)].into(),
            type_len: get_u16(&rec, OFF_TYPE_LEN),
            name_len,
            name_full_len: get_u32(&rec, OFF_NAME_FULL_LEN),
            marks: rec[OFF_MARKS],
            whole: (rec[OFF_MARKS] != 0).then(|| ([name, op_type].concat().into(), name.len())),
        }
    }

    /// The name and type as records carry them (cut where they were too long).
    pub fn strings(&self) -> (&[u8], &[u8]) {
        let t = &self.strings[..self.type_len as usize];
        let n = OFF_NAME - OFF_TYPE;
        (&self.strings[n..n + self.name_len as usize], t)
    }

    /// The bytes the image holds.
    pub fn size(&self) -> usize {
        std::mem::size_of::<OpImage>()
            + self.strings.len()
            + self.whole.as_ref().map_or(0, |w| w.0.len())
    }
}

/// Copies [`IMAGE_MIN`] bytes in eight 16-byte moves, inline (a constant-size
/// `copy_from_slice` of this size still calls `memcpy`).
#[inline(always)]
fn copy_min(dst: &mut [u8], src: &[u8]) {
    assert!(dst.len() == IMAGE_MIN && src.len() == IMAGE_MIN);
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        for k in 0..IMAGE_MIN / 16 {
            // SAFETY: SSE2 is part of x86-64; both slices hold IMAGE_MIN bytes (checked),
            // and unaligned loads and stores may be anywhere in them.
            unsafe {
                let v = _mm_loadu_si128(src.as_ptr().add(16 * k) as *const __m128i);
                _mm_storeu_si128(dst.as_mut_ptr().add(16 * k) as *mut __m128i, v);
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

/// Fills `rec` with `f` and the prepared strings of `img`, as [`encode`] of the registered
/// strings would. `fresh`: `rec` is all zero (a lane's first lap); otherwise it holds a record
/// [`encode_over`] or this function wrote, whose name bytes past the new name are cleared.
/// The type field is copied whole, so an old type leaves nothing behind.
#[inline(always)]
pub fn encode_image(rec: &mut Record, f: &OpFields, img: &OpImage, fresh: bool) {
    let old_n = if fresh {
        0
    } else {
        (get_u16(rec, OFF_NAME_LEN) as usize).min(MAX_NAME_LEN)
    };
    put_header(
        rec,
        f,
        img.type_len,
        img.name_len,
        img.name_full_len,
        img.marks,
    );
    let end = OFF_TYPE + img.strings.len();
    if img.strings.len() == IMAGE_MIN {
        copy_min(
            &mut rec[OFF_TYPE..OFF_TYPE + IMAGE_MIN],
            &img.strings[..IMAGE_MIN],
        );
    } else {
        rec[OFF_TYPE..end].copy_from_slice(&img.strings);
    }
    // The image's zeros cleared the old name as far as they reach.
    if OFF_NAME + old_n > end {
        rec[end..OFF_NAME + old_n].fill(0);
    }
}

/// What a record's strings are made from: the names a runtime reported ([`Names`]), or an
/// image prepared when the op was registered ([`OpImage`]).
pub trait OpStrings<'a>: Copy {
    /// [`encode`] (`fresh`) or [`encode_over`] of these strings.
    fn encode(self, rec: &mut Record, f: &OpFields, fresh: bool);
    /// The whole strings when one is longer than its field (they are then remembered per
    /// op, `names`), else None.
    fn cut(self) -> Option<Names<'a>>;
}

/// A reported op's name and type, the bytes of C strings.
#[derive(Clone, Copy, Debug)]
pub struct Names<'a>(pub &'a [u8], pub &'a [u8]);

impl<'a> OpStrings<'a> for Names<'a> {
    #[inline(always)]
    fn encode(self, rec: &mut Record, f: &OpFields, fresh: bool) {
        if fresh {
            encode(rec, f, self.0, self.1);
        } else {
            encode_over(rec, f, self.0, self.1);
        }
    }
    #[inline(always)]
    fn cut(self) -> Option<Names<'a>> {
        (self.0.len() > MAX_NAME_LEN || self.1.len() > MAX_TYPE_LEN).then_some(self)
    }
}

/// A reported op's name and type given with their lengths: C strings' bytes that may hold a
/// NUL, which ends the string as a C reader would read it. Encoded as [`Names`] (no scan
/// before the copy), then the copied bytes are checked for a NUL (16 at a time, inside the
/// record) and, in the rare case one is there, encoded again, cut at it.
#[derive(Clone, Copy, Debug)]
pub struct Given<'a>(pub &'a [u8], pub &'a [u8]);

impl Given<'_> {
    #[cold]
    #[inline(never)]
    fn encode_cut_at_nul(self, rec: &mut Record, f: &OpFields) {
        encode_over(rec, f, until_nul(self.0), until_nul(self.1));
    }
}

impl<'a> OpStrings<'a> for Given<'a> {
    #[inline(always)]
    fn encode(self, rec: &mut Record, f: &OpFields, fresh: bool) {
        if fresh {
            encode_bytes(rec, f, self.0, self.1);
        } else {
            encode_bytes_over(rec, f, self.0, self.1);
        }
        let t = get_u16(rec, OFF_TYPE_LEN) as usize;
        let n = get_u16(rec, OFF_NAME_LEN) as usize;
        if first_nul(&rec[OFF_TYPE..], t) < t || first_nul(&rec[OFF_NAME..], n) < n {
            self.encode_cut_at_nul(rec, f);
        }
    }
    #[inline(always)]
    fn cut(self) -> Option<Names<'a>> {
        Names(self.0, self.1).cut()?;
        Names(until_nul(self.0), until_nul(self.1)).cut()
    }
}

impl<'a> OpStrings<'a> for &'a OpImage {
    #[inline(always)]
    fn encode(self, rec: &mut Record, f: &OpFields, fresh: bool) {
        encode_image(rec, f, self, fresh);
    }
    #[inline(always)]
    fn cut(self) -> Option<Names<'a>> {
        self.whole.as_ref().map(|(b, n)| {
            let (name, op_type) = b.split_at(*n);
            Names(name, op_type)
        })
    }
}

/// Where the first zero byte of `field` is, given one at `len` or before (a string field's
/// terminator): 16 bytes at a time, so `field` holds `len` rounded up to 16 and 16 more.
#[inline(always)]
fn first_nul(field: &[u8], len: usize) -> usize {
    assert!(field.len() >= (len / 16 + 1) * 16);
    let mut i = 0;
    while i <= len {
        let m = zero_bytes_16(&field[i..i + 16]);
        if m != 0 {
            return i + m.trailing_zeros() as usize;
        }
        i += 16;
    }
    len
}

/// Non-zero iff one of the first `len` bytes of `field` is zero; `field` holds at least
/// `len` rounded up to 16 bytes.
#[inline]
fn nul_in(field: &[u8], len: usize) -> u64 {
    assert!(field.len() >= len.div_ceil(16) * 16);
    let mut zero = 0u64;
    let mut i = 0;
    while i < len {
        let valid = if len - i >= 16 {
            0xFFFF
        } else {
            (1u64 << (len - i)) - 1
        };
        zero |= zero_bytes_16(&field[i..i + 16]) & valid;
        i += 16;
    }
    zero
}

/// One bit per zero byte of a 16-byte block (bit k for byte k).
#[inline]
fn zero_bytes_16(b: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        assert!(b.len() >= 16);
        // SAFETY: SSE2 is part of x86-64; the load reads the 16 bytes just checked.
        unsafe {
            let v = _mm_loadu_si128(b.as_ptr() as *const __m128i);
            _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128())) as u32 as u64
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        b[..16]
            .iter()
            .enumerate()
            .fold(0, |m, (k, &x)| m | (((x == 0) as u64) << k))
    }
}

/// A verified record (length and signature checked by the accessor layer). A whole
/// record by type, so reading a field has no bounds check and no panic.
#[derive(Clone, Copy)]
pub struct View<'a>(pub &'a Record);

impl std::fmt::Debug for View<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "View(model {}, op {})", self.model_id(), self.op_index())
    }
}

impl<'a> View<'a> {
    pub fn model_id(&self) -> u32 {
        get_u32(self.0, OFF_MODEL_ID)
    }
    pub fn flag(&self) -> u32 {
        get_u32(self.0, OFF_FLAG)
    }
    pub fn thread_id(&self) -> u32 {
        get_u32(self.0, OFF_THREAD_ID)
    }
    pub fn op_index(&self) -> u64 {
        get_u64(self.0, OFF_OP_INDEX)
    }
    pub fn start(&self) -> u64 {
        get_u64(self.0, OFF_START)
    }
    pub fn end(&self) -> u64 {
        get_u64(self.0, OFF_END)
    }
    pub fn duration(&self) -> u64 {
        get_u64(self.0, OFF_DURATION)
    }
    pub fn dev_id(&self) -> u32 {
        get_u32(self.0, OFF_DEV_ID)
    }
    /// 1 + the op's index in the simulated model it replays, or 0 (see [`OpFields::sim_op`]).
    pub fn sim_op(&self) -> u32 {
        get_u32(self.0, OFF_SIM_OP)
    }
    /// The op's id in the op metadata table, or 0 (see [`OpFields::meta`]).
    pub fn meta(&self) -> u32 {
        get_u32(self.0, OFF_META)
    }
    pub fn pid(&self) -> u32 {
        get_u32(self.0, OFF_PID)
    }
    pub fn stream_id(&self) -> u32 {
        get_u32(self.0, OFF_STREAM_ID)
    }
    pub fn marks(&self) -> u8 {
        self.0[OFF_MARKS]
    }
    fn inline_str(&self, off: usize, len_off: usize, max: usize) -> Option<&'a [u8]> {
        let len = get_u16(self.0, len_off) as usize;
        if len > max || self.0[off + len] != 0 {
            return None;
        }
        // Both string fields end at least 16 bytes before the record does, so whole blocks
        // can be read past the string; the bytes past it are ignored.
        let field = &self.0[off..off + max + 16];
        let zero = nul_in(field, len);
        (zero == 0).then(|| &self.0[off..off + len])
    }
    /// The op type stored inline, or `None` if the record's string fields are inconsistent.
    pub fn op_type(&self) -> Option<&'a [u8]> {
        self.inline_str(OFF_TYPE, OFF_TYPE_LEN, MAX_TYPE_LEN)
    }
    /// The op name stored inline (possibly truncated), or `None` if inconsistent.
    pub fn name(&self) -> Option<&'a [u8]> {
        self.inline_str(OFF_NAME, OFF_NAME_LEN, MAX_NAME_LEN)
    }
    /// The op name stored inline, for a record whose [`View::name`] was found consistent
    /// (no scan for its end).
    pub fn name_checked(&self) -> &'a [u8] {
        let len = (get_u16(self.0, OFF_NAME_LEN) as usize).min(MAX_NAME_LEN);
        &self.0[OFF_NAME..OFF_NAME + len]
    }
    /// The op type stored inline, for a record whose [`View::op_type`] was found consistent.
    pub fn op_type_checked(&self) -> &'a [u8] {
        let len = (get_u16(self.0, OFF_TYPE_LEN) as usize).min(MAX_TYPE_LEN);
        &self.0[OFF_TYPE..OFF_TYPE + len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings given with their lengths encode as their bytes up to a NUL among them.
    #[test]
    fn given_strings_are_cut_at_a_nul() {
        let f = OpFields::default();
        let long = [b"a".repeat(200), vec![0], b"b".repeat(100)].concat();
        for (n, t) in [
            (&b"conv1\0xyz"[..], &b"Conv2D"[..]),
            (b"conv1", b"T\0U"),
            (b"\0", b""),
            (&long, b"Add"),
        ] {
            let mut want = [0u8; RECORD_SIZE];
            encode(&mut want, &f, until_nul(n), until_nul(t));
            for old in [&b"x"[..], &b"y".repeat(300)] {
                let mut slot = [0u8; RECORD_SIZE];
                encode(&mut slot, &f, old, b"OldType");
                Given(n, t).encode(&mut slot, &f, false);
                assert!(slot == want, "{n:?} over {} bytes", old.len());
            }
            let mut fresh = [0u8; RECORD_SIZE];
            Given(n, t).encode(&mut fresh, &f, true);
            assert!(fresh == want);
        }
    }

    /// A registered op's record is byte for byte what [`encode`] makes of its strings, into
    /// a fresh slot and over any record before it, long names included.
    #[test]
    fn an_image_encodes_as_its_strings_do() {
        let long = "n".repeat(300);
        let long_t = "t".repeat(70);
        let cases: [(&str, &str); 5] = [
            ("resnet50/conv1/Conv2D", "Conv2D"),
            ("", ""),
            ("x", "MatMulV2"),
            (&long, "Add"),
            ("é".repeat(140).leak(), &long_t),
        ];
        let f = OpFields {
            model_id: 3,
            thread_id: 9,
            op_index: 77,
            start: 10,
            end: 25,
            execution_time: 15,
            dev_id: 1,
            pid: 5,
            stream_id: 2,
            sim_op: 4,
            meta: 6,
            ..Default::default()
        };
        for (n, t) in cases {
            let img = OpImage::new(n.as_bytes(), t.as_bytes());
            let mut want = [0u8; RECORD_SIZE];
            encode(&mut want, &f, n.as_bytes(), t.as_bytes());
            let mut fresh = [0u8; RECORD_SIZE];
            encode_image(&mut fresh, &f, &img, true);
            assert!(fresh == want, "fresh slot, name of {} bytes", n.len());
            assert_eq!(
                (&img).cut().is_some(),
                n.len() > MAX_NAME_LEN || t.len() > MAX_TYPE_LEN
            );
            for (pn, pt) in cases {
                let mut slot = [0u8; RECORD_SIZE];
                encode(
                    &mut slot,
                    &OpFields::default(),
                    pn.as_bytes(),
                    pt.as_bytes(),
                );
                encode_image(&mut slot, &f, &img, false);
                assert!(slot == want, "over {pn:?}/{pt:?}");
            }
        }
    }

    /// Python's copy of the layout (`python/aclprof/records.py`, a numpy dtype that decodes
    /// records without the library) is this one, field for field.
    #[test]
    fn the_python_layout_is_this_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/python/aclprof/records.py");
        let py = std::fs::read_to_string(path).unwrap();
        let start = py.find("_LAYOUT = [").expect("records.py has _LAYOUT");
        let body = &py[start..start + py[start..].find("\n]").unwrap()];
        // (name, numpy type, offset) tuples, one per line.
        let fields: Vec<(String, String, usize)> = body
            .lines()
            .filter_map(|l| {
                let l = l.trim().strip_prefix('(')?.strip_suffix("),")?;
                let mut p = l.splitn(3, ", ");
                let name = p.next()?.trim_matches('"').to_string();
                let ty = p
                    .next()?
                    .trim_start_matches('f')
                    .trim_matches('"')
                    .to_string();
                Some((name, ty, p.next()?.trim().parse().ok()?))
            })
            .collect();
        let want: Vec<(&str, String, usize)> = vec![
            ("signature", "<u4".into(), OFF_SIGNATURE),
            ("model_id", "<u4".into(), OFF_MODEL_ID),
            ("flag", "<u4".into(), OFF_FLAG),
            ("thread_id", "<u4".into(), OFF_THREAD_ID),
            ("op_index", "<u8".into(), OFF_OP_INDEX),
            ("duration", "<u8".into(), OFF_DURATION),
            ("start", "<u8".into(), OFF_START),
            ("end", "<u8".into(), OFF_END),
            ("execution_time", "<u8".into(), OFF_EXEC_TIME),
            ("cube_fops", "<u8".into(), OFF_CUBE_FOPS),
            ("vector_fops", "<u8".into(), OFF_VECTOR_FOPS),
            ("device_id", "<u4".into(), OFF_DEV_ID),
            ("type_len", "<u2".into(), OFF_TYPE_LEN),
            ("name_len", "<u2".into(), OFF_NAME_LEN),
            ("name_full_len", "<u4".into(), OFF_NAME_FULL_LEN),
            ("pid", "<u4".into(), OFF_PID),
            ("stream_id", "<u4".into(), OFF_STREAM_ID),
            ("version", "u1".into(), OFF_VERSION),
            ("marks", "u1".into(), OFF_MARKS),
            ("type", "S{_MAX_TYPE_LEN + 1}".into(), OFF_TYPE),
            ("name", "S{_MAX_NAME_LEN + 1}".into(), OFF_NAME),
        ];
        let got: Vec<(&str, String, usize)> = fields
            .iter()
            .map(|(n, t, o)| (n.as_str(), t.clone(), *o))
            .collect();
        assert_eq!(got, want, "{path}");
        for (name, v) in [
            ("_MAX_TYPE_LEN", MAX_TYPE_LEN),
            ("_MAX_NAME_LEN", MAX_NAME_LEN),
            ("_MARK_NAME_TRUNCATED", MARK_NAME_TRUNCATED.into()),
            ("_MARK_TYPE_TRUNCATED", MARK_TYPE_TRUNCATED.into()),
            ("RECORD_SIZE", RECORD_SIZE),
        ] {
            assert!(
                py.contains(&format!("\n{name} = {v}\n")),
                "{path}: {name} = {v}"
            );
        }
    }

    #[test]
    fn encoding_over_an_old_record_equals_encoding_into_zeros() {
        let strings: [&[u8]; 6] = [b"", b"x", b"Conv2D", &[b'n'; 300], &[b't'; 64], b"MatMul"];
        let mut slot = [0u8; RECORD_SIZE];
        for (k, name) in strings.iter().enumerate() {
            for op_type in strings.iter().rev() {
                let f = OpFields {
                    op_index: k as u64,
                    start: 5,
                    end: 9,
                    ..Default::default()
                };
                encode_over(&mut slot, &f, name, op_type);
                sign_fresh(&mut slot);
                let mut fresh = [0u8; RECORD_SIZE];
                encode(&mut fresh, &f, name, op_type);
                sign_fresh(&mut fresh);
                assert!(
                    slot == fresh,
                    "name {} then type {}",
                    name.len(),
                    op_type.len()
                );
                assert_eq!(get_u32(&slot, 0), signature_of(&slot));
            }
        }
    }

    #[test]
    fn a_nul_inside_either_string_is_found_wherever_it_is() {
        for len in [0usize, 1, 7, 8, 9, 15, 16, 17, 35, 63, 64] {
            let s: Vec<u8> = (0..len).map(|i| 0x80 | (i as u8 + 1)).collect();
            let mut r = [0u8; RECORD_SIZE];
            encode(&mut r, &OpFields::default(), &s, &s);
            assert_eq!(View(&r).name(), Some(&s[..]), "len {len}");
            assert_eq!(View(&r).op_type(), Some(&s[..]), "len {len}");
            for at in 0..len {
                let mut t = r;
                t[OFF_NAME + at] = 0;
                assert!(View(&t).name().is_none(), "name len {len}, NUL at {at}");
                let mut t = r;
                t[OFF_TYPE + at] = 0;
                assert!(View(&t).op_type().is_none(), "type len {len}, NUL at {at}");
            }
        }
    }

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// CANN's own 72-byte test vectors, from its signature tests.
    #[test]
    fn crc_matches_canns_vectors() {
        assert_eq!(crc_register(b"123456789"), 0x1CF96D7C);
        assert_eq!(crc_register(&[0u8; 68]), 0x27F2B917);
        let mut r = hex("c9d41cfc 01000000 00000000 39300000 0100000000000000 dc05000000000000 40420f0000000000 1c480f0000000000");
        r.resize(72, 0);
        assert_eq!(signature_of(&r), 0xFC1CD4C9);
        assert_eq!(get_u32(&r, 0), 0xFC1CD4C9);
        let mut r2 = vec![0u8; 72];
        r2[4..8].copy_from_slice(&7u32.to_le_bytes());
        r2[8..12].copy_from_slice(&2u32.to_le_bytes());
        r2[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        r2[16..24].copy_from_slice(&42u64.to_le_bytes());
        r2[24..32].copy_from_slice(&100u64.to_le_bytes());
        r2[32..40].copy_from_slice(&5u64.to_le_bytes());
        r2[40..48].copy_from_slice(&105u64.to_le_bytes());
        r2[48..56].copy_from_slice(&50u64.to_le_bytes());
        assert_eq!(signature_of(&r2), 0xEAF47261);
    }

    /// An independent bit-by-bit CRC-32C register, to cross-check the hardware path on
    /// 512-byte records.
    fn bitwise_register(bytes: &[u8]) -> u32 {
        let mut crc = 0xFFFF_FFFFu32;
        for &b in bytes {
            crc ^= b as u32;
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ 0x82F6_3B78
                } else {
                    crc >> 1
                };
            }
        }
        crc
    }

    pub(crate) fn sample() -> Record {
        let mut r = [0u8; RECORD_SIZE];
        let f = OpFields {
            model_id: 1,
            thread_id: 12345,
            op_index: 1,
            start: 1_000_000,
            end: 1_001_500,
            dev_id: 0,
            pid: 4242,
            stream_id: 3,
            ..Default::default()
        };
        encode(&mut r, &f, b"resnet50/conv1/Conv2D", b"Conv2D");
        sign(&mut r);
        r
    }

    /// Our own committed vectors for 512-byte records: if the layout or the signature ever
    /// changes, these fail.
    #[test]
    fn committed_512_byte_vectors() {
        let r = sample();
        assert_eq!(signature_of(&r), bitwise_register(&r[4..]));
        assert_eq!(
            get_u32(&r, 0),
            0x4664_FF3E,
            "signature of the sample record is {:#010x}",
            get_u32(&r, 0)
        );
        let zero = [0u8; RECORD_SIZE];
        assert_eq!(signature_of(&zero), bitwise_register(&zero[4..]));
        assert_eq!(
            signature_of(&zero),
            0x13A8_563C,
            "signature of a zero record is {:#010x}",
            signature_of(&zero)
        );
    }

    #[test]
    fn encode_lays_out_canns_fields_then_strings() {
        let r = sample();
        let v = View(&r);
        assert_eq!(v.model_id(), 1);
        assert_eq!(v.thread_id(), 12345);
        assert_eq!(v.op_index(), 1);
        assert_eq!(v.duration(), 1500);
        assert_eq!(v.start(), 1_000_000);
        assert_eq!(v.end(), 1_001_500);
        assert_eq!(v.name().unwrap(), b"resnet50/conv1/Conv2D");
        assert_eq!(v.op_type().unwrap(), b"Conv2D");
        assert_eq!(v.pid(), 4242);
        assert_eq!(v.stream_id(), 3);
        assert!(r[OFF_RESERVED..].iter().all(|&b| b == 0));
        assert!(r[76..80].iter().all(|&b| b == 0));
    }

    #[test]
    fn the_metadata_id_is_signed_whatever_the_name_length() {
        for n in [0, 1, 7, 8, 100, 255, 256, 300] {
            let f = OpFields {
                meta: 0xA1B2_C3D4,
                ..Default::default()
            };
            let mut r = [0u8; RECORD_SIZE];
            encode(&mut r, &f, "n".repeat(n).as_bytes(), b"T");
            assert_eq!(View(&r).meta(), 0xA1B2_C3D4);
            assert_eq!(
                fresh_signature_of(&r),
                signature_of(&r),
                "name of {n} bytes"
            );
            // A slot reused for an op without metadata holds none.
            encode_over(&mut r, &OpFields::default(), b"x", b"T");
            assert_eq!(View(&r).meta(), 0);
            assert_eq!(fresh_signature_of(&r), signature_of(&r));
        }
    }

    #[test]
    fn long_strings_are_truncated_and_marked() {
        let mut r = [0u8; RECORD_SIZE];
        let name = "é".repeat(200); // 400 bytes, 2-byte characters
        encode(&mut r, &OpFields::default(), name.as_bytes(), &[b'T'; 70]);
        let v = View(&r);
        assert_eq!(v.name().unwrap().len(), 256);
        assert!(std::str::from_utf8(v.name().unwrap()).is_ok());
        assert_eq!(v.op_type().unwrap().len(), 64);
        assert_eq!(v.marks(), MARK_NAME_TRUNCATED | MARK_TYPE_TRUNCATED);
        assert_eq!(get_u32(&r, OFF_NAME_FULL_LEN), 400);
        let odd = "a".to_string() + &"é".repeat(200);
        let mut r = [0u8; RECORD_SIZE];
        encode(&mut r, &OpFields::default(), odd.as_bytes(), b"T");
        assert_eq!(
            View(&r).name().unwrap().len(),
            255,
            "must not split a character"
        );
    }

    #[test]
    fn inconsistent_lengths_are_rejected() {
        let mut r = sample();
        r[OFF_NAME_LEN] = 0xFF;
        r[OFF_NAME_LEN + 1] = 0x01;
        assert!(View(&r).name().is_none());
        let mut r = sample();
        r[OFF_TYPE_LEN] = 2; // "Co" followed by 'n', not NUL
        assert!(View(&r).op_type().is_none());
    }
}
