//! Kernel software timestamps (SO_TIMESTAMPING), UDP and TCP:
//! - receive (SOF_TIMESTAMPING_RX_SOFTWARE; for TCP, the stamp of the segment that completed a
//!   response): the time the kernel took a response in, next to the user-space time it was read;
//! - transmit (SOF_TIMESTAMPING_TX_SOFTWARE + OPT_ID + OPT_TSONLY): the time the kernel handed a
//!   request to the device, read back from the socket's error queue ([`TxStamps`]) by its OPT_ID
//!   key (UDP: the send's number from 0; TCP: the byte offset of the request's last byte).
//!   TX stamp -> RX stamp is the kernel-to-kernel round trip (`rtt_kernel_ns`).
//!
//! The kernel stamps CLOCK_REALTIME; [`ClockMap`] maps it to CLOCK_MONOTONIC (both measured at
//! start, the run is short enough that their drift is far below the measured latencies).

use std::os::fd::RawFd;

const SOF_TIMESTAMPING_TX_SOFTWARE: u32 = 1 << 1;
const SOF_TIMESTAMPING_RX_SOFTWARE: u32 = 1 << 3;
const SOF_TIMESTAMPING_SOFTWARE: u32 = 1 << 4;
const SOF_TIMESTAMPING_OPT_ID: u32 = 1 << 7;
const SOF_TIMESTAMPING_OPT_TSONLY: u32 = 1 << 11;
/// `sock_extended_err.ee_origin` of a timestamp (linux/errqueue.h).
const SO_EE_ORIGIN_TIMESTAMPING: u8 = 4;
/// `sock_extended_err.ee_info` of a software/driver transmit stamp (SCM_TSTAMP_SND).
const SCM_TSTAMP_SND: u32 = 0;

/// Which kernel timestamps a socket gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Enabled {
    pub rx: bool,
    pub tx: bool,
}

fn set_flags(fd: RawFd, flags: u32) -> bool {
    // SAFETY: flags is a valid u32 option value of the declared size.
    unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPING, (&flags as *const u32).cast(), 4) == 0 }
}

/// Ask the kernel for software receive and transmit timestamps on `fd`; receive only if it
/// refuses transmit stamps, none if it refuses both.
pub fn enable(fd: RawFd) -> Enabled {
    let rx = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
    if set_flags(fd, rx | SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY) {
        return Enabled { rx: true, tx: true };
    }
    Enabled { rx: set_flags(fd, rx), tx: false }
}

/// Slots of [`TxStamps`]: stamps older than this many sends are forgotten (bounded memory).
const TX_SLOTS: usize = 4096;

/// Transmit stamps read from a socket's error queue, by OPT_ID key (32 bits, wrapping).
pub struct TxStamps {
    ring: Vec<Option<(u32, u64)>>,
    /// Stamps read so far.
    pub read: u64,
}

impl Default for TxStamps {
    fn default() -> Self {
        TxStamps { ring: vec![None; TX_SLOTS], read: 0 }
    }
}

impl TxStamps {
    /// Read every transmit stamp queued on `fd` (never blocks).
    pub fn drain(&mut self, fd: RawFd) {
        // Bounded: the error queue holds at most the socket's receive buffer worth of stamps.
        for _ in 0..TX_SLOTS {
            match read_errqueue(fd) {
                Some(Some((key, ts))) => {
                    self.ring[key as usize % TX_SLOTS] = Some((key, ts));
                    self.read += 1;
                }
                Some(None) => {}
                None => return,
            }
        }
    }

    /// The kernel transmit stamp (CLOCK_REALTIME ns) of the send with OPT_ID `key`.
    pub fn get(&self, key: u32) -> Option<u64> {
        match self.ring[key as usize % TX_SLOTS] {
            Some((k, ts)) if k == key => Some(ts),
            _ => None,
        }
    }
}

/// One message of the error queue: None when it is empty, Some(None) for a message that is not
/// a software transmit stamp, Some(Some((key, realtime ns))) for one.
fn read_errqueue(fd: RawFd) -> Option<Option<(u32, u64)>> {
    let mut data = [0u8; 64];
    let (mut ts, mut key) = (None, None);
    recvmsg_cmsgs(fd, &mut data, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT, |level, kind, data| {
        if let Some(t) = software_stamp(level, kind, data) {
            ts = t;
        } else if (level == libc::SOL_IP && kind == libc::IP_RECVERR)
            || (level == libc::SOL_IPV6 && kind == libc::IPV6_RECVERR)
        {
            // SAFETY: a RECVERR message carries a sock_extended_err.
            let e = unsafe { std::ptr::read_unaligned(data as *const libc::sock_extended_err) };
            if e.ee_errno == libc::ENOMSG as u32
                && e.ee_origin == SO_EE_ORIGIN_TIMESTAMPING
                && e.ee_info == SCM_TSTAMP_SND
            {
                key = Some(e.ee_data);
            }
        }
    })
    .ok()?;
    Some(key.zip(ts))
}

/// recvmsg into `buf` with `flags`, calling `on_cmsg(level, type, data)` for every control
/// message; (bytes, msg_flags).
fn recvmsg_cmsgs(
    fd: RawFd,
    buf: &mut [u8],
    flags: i32,
    mut on_cmsg: impl FnMut(i32, i32, *const u8),
) -> std::io::Result<(usize, i32)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let mut control = [0u64; 64];
    // SAFETY: msghdr is plain data; we point it at valid buffers that outlive the call, and walk
    // only the control messages the kernel wrote into `control`.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        let n = libc::recvmsg(fd, &mut msg, flags);
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            on_cmsg((*c).cmsg_level, (*c).cmsg_type, libc::CMSG_DATA(c));
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        Ok((n as usize, msg.msg_flags))
    }
}

/// For an SO_TIMESTAMPING control message (`data` as [`recvmsg_cmsgs`] passes it), its software
/// stamp ([`timespec_ns`]); None for any other message.
fn software_stamp(level: i32, kind: i32, data: *const u8) -> Option<Option<u64>> {
    (level == libc::SOL_SOCKET && kind == libc::SO_TIMESTAMPING).then(|| {
        // SAFETY: an SO_TIMESTAMPING message carries scm_timestamping (software stamp first).
        timespec_ns(unsafe { std::ptr::read_unaligned(data as *const libc::timespec) })
    })
}

/// A kernel timespec as ns; None for the zero stamp (no stamp of that kind).
fn timespec_ns(timespec: libc::timespec) -> Option<u64> {
    (timespec.tv_sec != 0 || timespec.tv_nsec != 0)
        .then(|| timespec.tv_sec as u64 * 1_000_000_000 + timespec.tv_nsec as u64)
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
    let mut ts = None;
    let (n, flags) = recvmsg_cmsgs(fd, buf, if datagram { libc::MSG_TRUNC } else { 0 }, |level, kind, data| {
        if let Some(t) = software_stamp(level, kind, data) {
            ts = t;
        }
    })?;
    Ok(Received {
        len: n.min(buf.len()),
        truncated: n > buf.len() || flags & libc::MSG_TRUNC != 0,
        kernel_rx_realtime_ns: ts,
    })
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
