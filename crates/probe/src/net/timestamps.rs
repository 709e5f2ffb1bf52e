//! Kernel software receive timestamps (SO_TIMESTAMPING, SOF_TIMESTAMPING_RX_SOFTWARE), UDP and TCP
//! (for TCP, the stamp of the segment that completed a response): the time
//! the kernel took a datagram in, reported next to the user-space time it was read. The kernel
//! stamps CLOCK_REALTIME; [`ClockMap`] maps it to CLOCK_MONOTONIC (both measured at start, the run
//! is short enough that their drift is far below the measured latencies).

use std::os::fd::RawFd;

const SOF_TIMESTAMPING_RX_SOFTWARE: u32 = 1 << 3;
const SOF_TIMESTAMPING_SOFTWARE: u32 = 1 << 4;

/// Ask the kernel for software receive timestamps on `fd`; false if it refuses.
pub fn enable(fd: RawFd) -> bool {
    let flags: u32 = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
    // SAFETY: flags is a valid u32 option value of the declared size.
    unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPING, (&flags as *const u32).cast(), 4) == 0 }
}

/// One datagram read with recvmsg.
pub struct Received {
    pub len: usize,
    /// The datagram was longer than the buffer (MSG_TRUNC).
    pub truncated: bool,
    /// Kernel software receive timestamp (CLOCK_REALTIME ns), if the kernel gave one.
    pub kernel_rx_realtime_ns: Option<u64>,
}

/// recvmsg into `buf`, collecting the software timestamp; Err(WouldBlock/TimedOut) on timeout.
/// `datagram`: pass MSG_TRUNC to learn a datagram's real length (never for streams, where it
/// would discard data).
pub fn recv(fd: RawFd, buf: &mut [u8], datagram: bool) -> std::io::Result<Received> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let mut control = [0u64; 64];
    // SAFETY: msghdr is plain data; we point it at valid buffers that outlive the call.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        let n = libc::recvmsg(fd, &mut msg, if datagram { libc::MSG_TRUNC } else { 0 });
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut ts = None;
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_TIMESTAMPING {
                let t = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                if t.tv_sec != 0 || t.tv_nsec != 0 {
                    ts = Some(t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64);
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        let n = n as usize;
        Ok(Received { len: n.min(buf.len()), truncated: n > buf.len() || msg.msg_flags & libc::MSG_TRUNC != 0, kernel_rx_realtime_ns: ts })
    }
}

/// Maps CLOCK_REALTIME to CLOCK_MONOTONIC.
#[derive(Debug, Clone, Copy)]
pub struct ClockMap {
    offset: i128,
}

impl ClockMap {
    pub fn now() -> ClockMap {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        let mono0 = crate::rt::now_ns();
        // SAFETY: valid timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
        let mono1 = crate::rt::now_ns();
        let real = ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128;
        ClockMap { offset: real - (mono0 as i128 + mono1 as i128) / 2 }
    }
    pub fn to_monotonic(&self, realtime_ns: u64) -> u64 {
        (realtime_ns as i128 - self.offset).max(0) as u64
    }
}
