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

/// The signature of a 512-byte record: the register over `rec[4..]`.
#[inline]
pub fn of_record(rec: &[u8; 512]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("sse4.2")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
        {
            // SAFETY: the CPU has the features the function is compiled for, and `rec` is
            // 512 readable bytes.
            return unsafe { x86::three_way_508(rec.as_ptr().add(4)) };
        }
    }
    register(&rec[4..])
}

/// Reflected CRC-32C polynomial.
const POLY: u32 = 0x82F6_3B78;

/// x^k mod P in the reflected representation (bit 31 is x^0).
const fn xpow(k: u32) -> u32 {
    let mut p: u32 = 0x8000_0000;
    let mut i = 0;
    while i < k {
        p = if p & 1 != 0 { (p >> 1) ^ POLY } else { p >> 1 };
        i += 1;
    }
    p
}

/// Bytes per chain after the first 4: 504 = 3 × 168, each 21 eight-byte words.
const THIRD: usize = 168;
/// Shift constants for 336 and 168 zero bytes.
#[allow(dead_code)] // only the x86-64 path multiplies
const K_TWO_THIRDS: u32 = xpow(8 * 2 * THIRD as u32 - 33);
#[allow(dead_code)]
const K_ONE_THIRD: u32 = xpow(8 * THIRD as u32 - 33);

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{K_ONE_THIRD, K_TWO_THIRDS, THIRD};
    use std::arch::x86_64::*;

    #[inline]
    #[target_feature(enable = "sse4.2,pclmulqdq")]
    unsafe fn shift(reg: u64, k: u32) -> u64 {
        let prod = _mm_clmulepi64_si128(
            _mm_cvtsi64_si128(reg as i64),
            _mm_cvtsi64_si128(k as i64),
            0,
        );
        _mm_crc32_u64(0, _mm_cvtsi128_si64(prod) as u64)
    }

    /// The register over the 508 bytes at `p`: the first chain takes one 4-byte word, then
    /// each chain takes 21 eight-byte words.
    #[target_feature(enable = "sse4.2,pclmulqdq")]
    pub unsafe fn three_way_508(p: *const u8) -> u32 {
        let first = std::ptr::read_unaligned(p as *const u32);
        let p = p.add(4);
        let word = |off: usize| std::ptr::read_unaligned(p.add(off) as *const u64);
        let (mut a, mut b, mut c) = (_mm_crc32_u32(0xFFFF_FFFF, first) as u64, 0u64, 0u64);
        let mut off = 0;
        while off < THIRD {
            a = _mm_crc32_u64(a, word(off));
            b = _mm_crc32_u64(b, word(THIRD + off));
            c = _mm_crc32_u64(c, word(2 * THIRD + off));
            off += 8;
        }
        (shift(a, K_TWO_THIRDS) ^ shift(b, K_ONE_THIRD) ^ c) as u32
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
                crc = if crc & 1 != 0 { (crc >> 1) ^ POLY } else { crc >> 1 };
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
                *b = if round % 3 == 0 && i > 200 { 0 } else { x as u8 };
            }
            assert_eq!(of_record(&rec), bitwise(&rec[4..]), "round {round}");
        }
        assert_eq!(of_record(&[0; 512]), 0x13A8_563C);
    }
}
