//! CANN's record signature (the CRC-32C register over bytes 4..512, initial 0xFFFFFFFF, no
//! final XOR), computed at the speed of the CPU's CRC unit rather than its latency.
//!
//! One `crc32` dependency chain over 508 bytes waits on the instruction's latency at every
//! step. Three independent chains over thirds of the bytes keep the unit busy; the chains are
//! joined with the CRC's linearity:
//!
//! ```text
//! reg(init, A‖B‖C) = shift(reg(init, A), |B|+|C|) ⊕ shift(reg(0, B), |C|) ⊕ reg(0, C)
//! ```
//!
//! where `shift(r, n)` (the register after `n` zero bytes) is one carry-less multiply by the
//! constant x^(8n−33) mod P followed by one `crc32` of the 64-bit product. The constants are
//! computed at compile time. Elsewhere (other CPUs, or x86-64 without SSE4.2/PCLMULQDQ) the
//! `crc32c` crate's single chain is used; both give the same bits, which the tests check
//! against a bit-by-bit reference.

/// The CRC register over `bytes`, starting from 0xFFFFFFFF, with no final XOR.
#[inline]
pub fn register(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes) ^ 0xFFFF_FFFF
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn has_clmul() -> bool {
    std::arch::is_x86_feature_detected!("sse4.2")
        && std::arch::is_x86_feature_detected!("pclmulqdq")
}

/// The register over `rec[4..]` of a 512-byte record whose bytes outside `[4, e1)` and
/// `[s2, e2)` may be non-zero (the spans are whole 8-byte words from offset 8, with
/// `56 <= e1 <= s2 <= e2 <= 512`) and the caller knows that the other bytes are zero (a
/// record just built: a producer's signing). Three independent chains (header, type, name)
/// are joined by shifts over the zeros. A reader verifying a record cannot know the zeros
/// without reading them, and reading them costs what hashing them does: [`of_record`].
#[inline]
pub fn of_sparse_record(rec: &[u8; 512], spans: (usize, usize, usize)) -> u32 {
    let (e1, s2, e2) = spans;
    let shaped = (56..=s2).contains(&e1) && s2 <= e2 && e2 <= 512 && (e1 - 8) % 8 == 0;
    if shaped {
        #[cfg(target_arch = "x86_64")]
        if has_clmul() {
            // SAFETY: the CPU has the features `sparse` is compiled for.
            return unsafe { x86::sparse(rec, e1, s2, e2) };
        }
    }
    of_record(rec)
}

/// The register over `rec[4..]` of a 512-byte record, all of it.
#[inline]
pub fn of_record(rec: &[u8; 512]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if has_clmul() {
        // SAFETY: the CPU has the features `three_way_508` is compiled for.
        return unsafe { x86::three_way_508(rec) };
    }
    register(&rec[4..])
}

/// Reflected CRC-32C polynomial.
#[cfg(any(test, target_arch = "x86_64"))]
const POLY: u32 = 0x82F6_3B78;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::POLY;
    use std::arch::x86_64::*;

    /// Multiplies by x (reflected: bit 31 is x^0).
    const fn mulx(p: u32) -> u32 {
        if p & 1 != 0 {
            (p >> 1) ^ POLY
        } else {
            p >> 1
        }
    }

    /// `SHIFT[n]` = x^(8n−33) mod P: shifts a register over `n` zero bytes (n ≥ 5).
    const SHIFT: [u32; 513] = {
        let mut t = [0u32; 513];
        let mut p: u32 = 0x8000_0000; // x^0
        let mut i = 0;
        while i < 8 * 5 - 33 {
            p = mulx(p);
            i += 1;
        }
        let mut n = 5;
        while n <= 512 {
            t[n] = p;
            let mut i = 0;
            while i < 8 {
                p = mulx(p);
                i += 1;
            }
            n += 1;
        }
        t
    };

    /// Bytes per chain after the first 4: 504 = 3 × 168, each 21 eight-byte words.
    const THIRD: usize = 168;

    #[inline]
    #[target_feature(enable = "sse4.2,pclmulqdq")]
    fn shift(reg: u64, k: u32) -> u64 {
        let prod = _mm_clmulepi64_si128(
            _mm_cvtsi64_si128(reg as i64),
            _mm_cvtsi64_si128(k as i64),
            0,
        );
        _mm_crc32_u64(0, _mm_cvtsi128_si64(prod) as u64)
    }

    /// `reg` after `n` zero bytes.
    #[inline]
    #[target_feature(enable = "sse4.2,pclmulqdq")]
    fn shift_n(reg: u64, n: usize) -> u64 {
        if n >= 5 {
            shift(reg, SHIFT[n])
        } else {
            let mut r = reg as u32;
            for _ in 0..n {
                r = _mm_crc32_u8(r, 0);
            }
            r as u64
        }
    }

    /// The register (from `init`) over the 8-byte words in `[from, to)` of `rec`.
    ///
    /// # Safety
    /// `to <= 512` (the words are read without bounds checks: this is the signing's loop).
    #[inline]
    #[target_feature(enable = "sse4.2,pclmulqdq")]
    unsafe fn chain(init: u64, rec: &[u8; 512], from: usize, to: usize) -> u64 {
        let mut r = init;
        let mut off = from;
        while off < to {
            // SAFETY: off + 8 <= to <= 512, the caller's promise.
            let word = unsafe { std::ptr::read_unaligned(rec.as_ptr().add(off).cast::<u64>()) };
            r = _mm_crc32_u64(r, word);
            off += 8;
        }
        r
    }

    /// The register over `rec[4..512]` when only `[4, e1)` and `[s2, e2)` may be non-zero:
    /// three independent chains (header, type, name), joined by shifts over the zeros.
    #[target_feature(enable = "sse4.2,pclmulqdq")]
    pub fn sparse(rec: &[u8; 512], e1: usize, s2: usize, e2: usize) -> u32 {
        const MID: usize = 56;
        let first = u32::from_le_bytes(rec[4..8].try_into().expect("4 bytes"));
        // SAFETY: MID, e1 and e2 are at most 512 (`of_sparse_record` checked the shape).
        let (a, b, c) = unsafe {
            (
                chain(_mm_crc32_u32(0xFFFF_FFFF, first) as u64, rec, 8, MID),
                chain(0, rec, MID, e1),
                chain(0, rec, s2, e2),
            )
        };
        let tail = 512 - e2;
        (shift_n(a, 512 - MID) ^ shift_n(b, 512 - e1) ^ shift_n(c, tail)) as u32
    }

    /// The register over the 508 bytes at `p`: the first chain takes one 4-byte word, then
    /// each chain takes 21 eight-byte words.
    #[target_feature(enable = "sse4.2,pclmulqdq")]
    pub fn three_way_508(rec: &[u8; 512]) -> u32 {
        let first = u32::from_le_bytes(rec[4..8].try_into().expect("4 bytes"));
        let word =
            |off: usize| u64::from_le_bytes(rec[8 + off..16 + off].try_into().expect("8 bytes"));
        let (mut a, mut b, mut c) = (_mm_crc32_u32(0xFFFF_FFFF, first) as u64, 0u64, 0u64);
        let mut off = 0;
        while off < THIRD {
            a = _mm_crc32_u64(a, word(off));
            b = _mm_crc32_u64(b, word(THIRD + off));
            c = _mm_crc32_u64(c, word(2 * THIRD + off));
            off += 8;
        }
        (shift(a, SHIFT[2 * THIRD]) ^ shift(b, SHIFT[THIRD]) ^ c) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bitwise(bytes: &[u8]) -> u32 {
        let mut crc = 0xFFFF_FFFFu32;
        for &b in bytes {
            crc ^= b as u32;
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ POLY
                } else {
                    crc >> 1
                };
            }
        }
        crc
    }

    #[test]
    fn three_way_equals_the_reference_on_many_records() {
        let mut rec = [0u8; 512];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..2000 {
            // xorshift fill; every few rounds mostly zeros, as real records are
            for (i, b) in rec.iter_mut().enumerate() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = if round % 3 == 0 && i > 200 {
                    0
                } else {
                    x as u8
                };
            }
            assert_eq!(of_record(&rec), bitwise(&rec[4..]), "round {round}");
        }
        assert_eq!(of_record(&[0; 512]), 0x13A8_563C);
    }

    #[test]
    fn sparse_path_equals_the_reference_for_every_string_length() {
        use crate::formats::record::{encode, OpFields};
        for tlen in [0usize, 1, 5, 6, 7, 8, 30, 63, 64, 70] {
            for nlen in [0usize, 1, 2, 3, 6, 7, 8, 9, 35, 100, 250, 255, 256, 300] {
                let mut r = [0u8; 512];
                let f = OpFields {
                    op_index: (tlen * 1000 + nlen) as u64,
                    start: 77,
                    end: 99,
                    ..Default::default()
                };
                encode(&mut r, &f, &vec![b'n'; nlen], &vec![b't'; tlen]);
                let want = bitwise(&r[4..]);
                let mut fresh = r;
                crate::formats::record::sign_fresh(&mut fresh);
                assert_eq!(
                    crate::formats::record::get_u32(&fresh, 0),
                    want,
                    "type {tlen}, name {nlen}"
                );
                assert_eq!(
                    crate::formats::record::signature_of(&r),
                    want,
                    "type {tlen}, name {nlen}"
                );
                // a non-zero byte where zeros are expected: verification must see it
                for at in [170 + nlen.min(256), 500, 511] {
                    let mut bad = r;
                    bad[at] ^= 0x40;
                    assert_eq!(
                        crate::formats::record::signature_of(&bad),
                        bitwise(&bad[4..]),
                        "byte {at}"
                    );
                }
            }
        }
    }
}
