//! Every aclprofGetOp* accessor on arbitrary bytes, lengths and indices: no crash, no
//! out-of-bounds read (under ASan), and the answers agree with each other.
//! Run: `cargo fuzz run accessors` (see README; needs cargo-fuzz).
#![no_main]

use aclprof::ffi::prof::*;
use libfuzzer_sys::fuzz_target;
use std::ffi::c_void;

fuzz_target!(|data: &[u8]| {
    if data.len() < 6 {
        return;
    }
    let index = u32::from_le_bytes(data[..4].try_into().unwrap()) % 8;
    let out_len = data[4] as usize;
    let mut body = data[5..].to_vec();
    // Half the time, make the records validly signed so decoding goes deep.
    if data[4] & 1 == 1 {
        for rec in body.chunks_exact_mut(512) {
            aclprof::formats::record::sign(rec);
        }
    }
    let p = body.as_ptr() as *const c_void;
    let len = body.len();
    unsafe {
        let mut n = 0u32;
        let num_ok = aclprofGetOpNum(p, len, &mut n) == 0;
        // The batch decoder agrees with aclprofGetOpNum, and its names point into the
        // buffer and end in a NUL there.
        let mut ops: Vec<aclprof::ffi::ext::aclprofExtOp> = Vec::with_capacity(8);
        let mut count = 0u32;
        let dec = aclprof::ffi::ext::aclprofExtDecodeOps(p, len, ops.as_mut_ptr(), 8, &mut count);
        if dec == 0 {
            ops.set_len(count as usize);
            for o in &ops {
                let name = std::ffi::CStr::from_ptr(o.name);
                assert_eq!(name.to_bytes().len(), o.nameLen as usize);
                assert!((o.name as usize) >= p as usize && (o.name as usize) < p as usize + len);
            }
        }
        let mut verify_only = 0u32;
        let all = aclprof::ffi::ext::aclprofExtDecodeOps(p, len, std::ptr::null_mut(), 0, &mut verify_only);
        assert_eq!(all == 0, num_ok, "verify-only decode agrees with aclprofGetOpNum");
        let mut l = 0usize;
        let name_ok = aclprofGetOpNameLen(p, len, index, &mut l) == 0;
        if num_ok {
            assert_eq!(n as usize * 512, len);
        }
        if name_ok {
            assert!(len % 512 == 0 && (index as usize + 1) * 512 <= len, "a record was read outside the buffer");
            let mut out = vec![0x55i8; out_len];
            let r = aclprofGetOpName(p, len, index, out.as_mut_ptr(), out_len);
            assert_eq!(r == 0, out_len >= l && out_len > 0, "name fits iff the buffer holds len bytes");
            if r == 0 {
                assert_eq!(out[l - 1], 0);
            } else {
                assert!(out.iter().all(|&b| b == 0x55), "nothing written on error");
            }
        }
        let mut t = 0usize;
        if aclprofGetOpTypeLen(p, len, index, &mut t) == 0 {
            let mut out = vec![0i8; t];
            assert_eq!(aclprofGetOpType(p, len, index, out.as_mut_ptr(), t), 0);
        }
        let model = aclprofGetModelId(p, len, index);
        if (index as usize + 1) * 512 > len || len % 512 != 0 {
            assert_eq!(model, 100000, "an out-of-range index is an error");
            assert_eq!(aclprofGetOpFlag(p, len, index).0, 0xFF);
            assert_eq!(aclprofGetOpStart(p, len, index), 0);
        }
        let _ = (aclprofGetOpDuration(p, len, index), aclprofGetOpEnd(p, len, index));
        let _ = aclprofGetOpAttriValue(p, len, index, aclprofSubscribeOpAttri(index % 3));
    }
});
