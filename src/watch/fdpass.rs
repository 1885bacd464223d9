//! Passing a descriptor over a Unix socket (`SCM_RIGHTS`) with one line of text: how the
//! agent hands a viewer its ring.

use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

/// A message header over one buffer (`iov`) with room for one fd's control message in
/// `ctl` (sized by [`fd_space`]).
fn one_fd_msg(iov: &mut libc::iovec, ctl: &mut [u8]) -> libc::msghdr {
    // SAFETY: an all-zero msghdr is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl.as_mut_ptr().cast();
    msg.msg_controllen = ctl.len() as _;
    msg
}

/// The control buffer's size for one fd.
fn fd_space() -> usize {
    // SAFETY: CMSG_SPACE is a pure computation.
    unsafe { libc::CMSG_SPACE(std::mem::size_of::<i32>() as u32) as usize }
}

/// Sends `line` and `fd` in one message.
pub fn send_fd(s: &UnixStream, line: &[u8], fd: i32) -> std::io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: line.as_ptr() as *mut libc::c_void,
        iov_len: line.len(),
    };
    let mut ctl = vec![0u8; fd_space()];
    let msg = one_fd_msg(&mut iov, &mut ctl);
    // SAFETY: msg points at live buffers for the duration of sendmsg; the control header
    // is written inside `ctl`, which fd_space sized for one fd.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<i32>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<i32>(), fd);
        if libc::sendmsg(s.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Receives one message: its text and the fd it carries, if any (owned: closed when dropped).
pub fn recv_fd(s: &UnixStream) -> std::io::Result<(String, Option<std::os::fd::OwnedFd>)> {
    let mut data = [0u8; 512];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: data.len(),
    };
    let mut ctl = vec![0u8; fd_space()];
    let mut msg = one_fd_msg(&mut iov, &mut ctl);
    // SAFETY: msg points at live buffers for the duration of recvmsg; the control data is
    // read only inside what the kernel filled in.
    unsafe {
        let n = libc::recvmsg(s.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the process closed the connection",
            ));
        }
        let mut fd = None;
        let c = libc::CMSG_FIRSTHDR(&msg);
        if !c.is_null() && (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS
        {
            let raw = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<i32>());
            // SAFETY: SCM_RIGHTS gave this process a new descriptor, owned by no one else.
            fd = Some(<std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw));
        }
        Ok((
            String::from_utf8_lossy(&data[..n as usize]).into_owned(),
            fd,
        ))
    }
}
