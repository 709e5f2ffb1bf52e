//! `measure net client --in vm --explain`: the host's `guest` segment of each round trip (the
//! request's transmit into the guest's tap to the response's receive from it) split by what the
//! server in the guest traced of the same request with its own `--explain` - its receive (the
//! virtio-net interrupt, NET_RX softirq/NAPI, socket enqueue, wake-up), the server, its send (send
//! syscall to `net_dev_xmit` into virtio) - and the remainder only the host-to-guest path explains:
//! QEMU and the virtual interrupt, both ways (`virtualization`).
//!
//! A guest request is joined to the host's by its sequence number (the request's own header), not
//! by time: the two clocks are related only by the serial handshake, whose precision under TCG is
//! larger than the segments. The guest's durations are its own clock's differences; the
//! remainder is the host's `guest` segment minus their sum, never negative: a request whose guest
//! record is missing, incomplete, malformed, or longer than the host's window stays one `guest`
//! segment, and the section says how many and why. The guest's section is untrusted input (it
//! comes out of the guest): only a bounded number of records, segments and texts are read.

use crate::explain::clock_sync::to_host;
use rtvirt_model::results::{ClockSync, ExplainSection, ExplainedSample, PathSegment, SegmentSummary};
use std::collections::{BTreeMap, HashMap};

/// The guest's segments of a request it answered (its server's `--explain`), in path order, and
/// the names they take in the host's round trip.
const GUEST_PATH: [(&str, &str); 3] =
    [("host_receive", "guest_receive"), ("server", "guest_server"), ("host_send", "guest_send")];
/// The host's segment that the guest's ones split.
pub const GUEST: &str = "guest";
/// What the host's `guest` segment holds beyond what the guest measured.
pub const VIRTUALIZATION: &str = "virtualization";
/// Guest records read at most (the guest keeps its worst 1000 by default).
pub const MAX_RECORDS: usize = 100_000;
/// Trace milestones kept per guest segment, and their length at most.
const MAX_VIA: usize = 16;
const MAX_TEXT: usize = 200;
/// The guest's own limitations and event names carried over, at most.
const MAX_CARRIED: usize = 64;

/// Why a request's `guest` segment stayed whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Unsplit {
    /// The guest kept no record of the request.
    NoRecord,
    /// The guest's trace lacked a milestone of it (its record has `unexplained`).
    Incomplete,
    /// The record is not the guest's three segments, or its durations overflow.
    Malformed,
    /// The guest measured more than the host's `guest` segment (the clocks' rates disagree).
    Longer,
}

impl Unsplit {
    fn why(self) -> &'static str {
        match self {
            Unsplit::NoRecord => {
                "the guest kept no record of them (it keeps its worst requests, or lost or never answered them)"
            }
            Unsplit::Incomplete => "the guest's trace lacks a milestone of them (its record is partly `unexplained`)",
            Unsplit::Malformed => "their guest record is malformed (not receive, server, send; or durations overflow)",
            Unsplit::Longer => {
                "the guest measured more than the host's `guest` segment, `virtualization` would be negative: the \
                 two clocks' rates disagree, or the guest's send ended at its transmit's return (`net_dev_xmit`: \
                 its kernel has no `net_dev_start_xmit`), which can come after QEMU has written the response to \
                 the tap"
            }
        }
    }
}

/// Split the `guest` segments of `client` (the host's explanation of round trips to a server in a
/// guest) with the records of `guest` (that server's explanation), then add the new segments to
/// the per-segment summary and say what could not be split.
pub fn split(client: &mut ExplainSection, guest: &ExplainSection) {
    let (records, over, duplicated) = records(guest);
    let mut unsplit: BTreeMap<Unsplit, u64> = BTreeMap::new();
    let mut through_tap = 0u64;
    let mut check = ClockCheck::new(client.run_start_ns, guest.guest_clock.clone());
    let mut longer_by = 0u64;
    for sample in &mut client.samples {
        let Some(at) = sample.segments.iter().position(|s| s.name == GUEST) else { continue };
        through_tap += 1;
        let record = sample.request.and_then(|seq| records.get(&seq).copied());
        let whole = (sample.segments[at].start_ns, sample.segments[at].duration_ns);
        match record.ok_or(Unsplit::NoRecord).and_then(|r| Ok((r, parts(r)?))) {
            Ok((record, parts)) => match replace(&mut sample.segments, at, &parts) {
                Ok(()) => check.request(whole, record),
                Err(excess) => {
                    longer_by = longer_by.max(excess);
                    *unsplit.entry(Unsplit::Longer).or_default() += 1
                }
            },
            Err(why) => *unsplit.entry(why).or_default() += 1,
        }
    }
    let split_count = through_tap - unsplit.values().sum::<u64>();
    add_summary(client, split_count);
    let l = &mut client.limitations;
    if through_tap > 0 {
        l.push(format!(
            "{split_count} of the {through_tap} requests kept that went through the guest's tap were joined by sequence \
             number to the guest server's own trace: their `guest` segment is split into `{VIRTUALIZATION}` (QEMU \
             and the virtual interrupt both ways: the host's `guest` segment minus what the guest measured; drawn \
             first, the host cannot tell how it divides between the way in and the way out), `guest_receive`, \
             `guest_server` and `guest_send` (durations on the guest's clock); the guest explained {} requests, {} \
             records came back",
            guest.samples_above,
            guest.samples.len()
        ));
    }
    if split_count > 0 {
        l.push(check.verdict());
    }
    for (why, n) in &unsplit {
        let by = match why {
            Unsplit::Longer => format!(" (by at most {longer_by} ns)"),
            _ => String::new(),
        };
        l.push(format!("{n} requests kept one `{GUEST}` segment: {}{by}", why.why()));
    }
    if over > 0 {
        l.push(format!("the guest sent {over} records beyond the {MAX_RECORDS} read: they were ignored"));
    }
    if duplicated > 0 {
        l.push(format!("{duplicated} sequence numbers appear more than once among the guest's records: not joined"));
    }
    carry_over(client, guest);
}

/// The sanity check of the joins on the converted clock: the guest's record of a request should
/// lie within the host's `guest` segment of it, give or take the handshake's precision.
struct ClockCheck {
    /// The host's run start and the guest clock's conversion, when both are known.
    clocks: Option<(u64, ClockSync)>,
    checked: u64,
    /// Requests whose guest record lies outside the host's window by more than the precision,
    /// and the largest such distance.
    outside: u64,
    worst_ns: u64,
}

impl ClockCheck {
    fn new(host_run_start: Option<u64>, guest_clock: Option<ClockSync>) -> ClockCheck {
        ClockCheck { clocks: host_run_start.zip(guest_clock), checked: 0, outside: 0, worst_ns: 0 }
    }

    /// A joined request: the host's `guest` segment (start since the run's start, duration) and
    /// the guest's record.
    fn request(&mut self, (start, duration): (u64, u64), record: &ExplainedSample) {
        let Some((run_start, clock)) = &self.clocks else { return };
        let host = (run_start.saturating_add(start), run_start.saturating_add(start).saturating_add(duration));
        let end = record.expected_ns.saturating_add(record.latency_ns);
        let guest = (to_host(clock, record.expected_ns), to_host(clock, end));
        let distance = host.0.saturating_sub(guest.0).max(guest.1.saturating_sub(host.1));
        self.checked += 1;
        if distance > clock.precision_ns {
            self.outside += 1;
            self.worst_ns = self.worst_ns.max(distance);
        }
    }

    fn verdict(&self) -> String {
        match &self.clocks {
            None => "the joins rest on sequence numbers alone: the guest's clock was not related to the host's \
                     (no clock check)"
                .into(),
            Some((_, clock)) => format!(
                "clock check of the joins: {} of {} joined requests lie within the host's `guest` segment on the \
                 guest clock converted by the serial handshake (+/-{} ns); {} lie outside it by more (at most {} ns): \
                 the sequence numbers joined them, the conversion is too coarse to place them",
                self.checked - self.outside,
                self.checked,
                clock.precision_ns,
                self.outside,
                self.worst_ns
            ),
        }
    }
}

/// The guest's records by sequence number (the first [`MAX_RECORDS`]); how many were beyond
/// them, and how many sequence numbers came more than once (none of those is used).
fn records(guest: &ExplainSection) -> (HashMap<u64, &ExplainedSample>, usize, usize) {
    let mut by_seq: HashMap<u64, Option<&ExplainedSample>> = HashMap::new();
    for s in guest.samples.iter().take(MAX_RECORDS) {
        let Some(seq) = s.request else { continue };
        by_seq.entry(seq).and_modify(|e| *e = None).or_insert(Some(s));
    }
    let duplicated = by_seq.values().filter(|r| r.is_none()).count();
    let by_seq = by_seq.into_iter().filter_map(|(k, v)| Some((k, v?))).collect();
    (by_seq, guest.samples.len().saturating_sub(MAX_RECORDS), duplicated)
}

/// A guest record's three segments, renamed, checked.
fn parts(record: &ExplainedSample) -> Result<Vec<PathSegment>, Unsplit> {
    if record.segments.iter().any(|s| s.missing.is_some() || s.name == "unexplained") {
        return Err(Unsplit::Incomplete);
    }
    if record.segments.len() != GUEST_PATH.len() {
        return Err(Unsplit::Malformed);
    }
    let mut total = 0u64;
    let mut out = Vec::with_capacity(GUEST_PATH.len());
    for (s, (theirs, ours)) in record.segments.iter().zip(GUEST_PATH) {
        if s.name != theirs {
            return Err(Unsplit::Malformed);
        }
        total = total.checked_add(s.duration_ns).ok_or(Unsplit::Malformed)?;
        let via = s.via.iter().take(MAX_VIA).map(|v| format!("guest: {}", bounded(v))).collect();
        out.push(PathSegment {
            name: ours.into(),
            start_ns: 0,
            duration_ns: s.duration_ns,
            cpu: s.cpu,
            via,
            missing: None,
        });
    }
    Ok(out)
}

/// Replace segment `at` (the host's `guest`) by `virtualization` and the guest's `parts`,
/// consecutive from its start, adding up to its duration; or by how much the parts are longer.
fn replace(segments: &mut Vec<PathSegment>, at: usize, parts: &[PathSegment]) -> Result<(), u64> {
    let whole = &segments[at];
    let measured: u64 = parts.iter().map(|p| p.duration_ns).sum();
    let rest = whole.duration_ns.checked_sub(measured).ok_or_else(|| measured - whole.duration_ns)?;
    let mut via = whole.via.clone();
    via.push(format!("minus the guest's receive, server and send: {measured} ns"));
    let mut new = vec![PathSegment {
        name: VIRTUALIZATION.into(),
        start_ns: whole.start_ns,
        duration_ns: rest,
        cpu: None,
        via,
        missing: None,
    }];
    let mut t = whole.start_ns + rest;
    for p in parts {
        new.push(PathSegment { start_ns: t, ..p.clone() });
        t += p.duration_ns;
    }
    segments.splice(at..=at, new);
    Ok(())
}

/// The new segments' summary over the split requests, after `guest`'s row (which stays: every
/// request through the tap, the host's view).
fn add_summary(client: &mut ExplainSection, split: u64) {
    if split == 0 {
        return;
    }
    let new = |name: &str| name == VIRTUALIZATION || GUEST_PATH.iter().any(|(_, ours)| *ours == name);
    let rows: Vec<SegmentSummary> =
        ExplainSection::summarize_segments(&client.samples).into_iter().filter(|r| new(&r.name)).collect();
    let after = client.segments.iter().position(|s| s.name == GUEST).map_or(client.segments.len(), |i| i + 1);
    client.segments.splice(after..after, rows);
}

/// The guest's clock, events and limitations, marked as the guest's (bounded).
fn carry_over(client: &mut ExplainSection, guest: &ExplainSection) {
    client.guest_clock = guest.guest_clock.clone();
    let present = guest.events_present.iter().take(MAX_CARRIED);
    client.events_present.extend(present.map(|e| format!("guest:{}", bounded(e))));
    let absent = guest.events_absent.iter().take(MAX_CARRIED);
    client.events_absent.extend(absent.map(|e| format!("guest:{}", bounded(e))));
    let limits = guest.limitations.iter().take(MAX_CARRIED);
    client.limitations.extend(limits.map(|l| format!("in the guest: {}", bounded(l))));
    if guest.limitations.len() > MAX_CARRIED {
        client
            .limitations
            .push(format!("the guest said {} more limitations, not kept", guest.limitations.len() - MAX_CARRIED));
    }
    if guest.events_lost > 0 {
        client.limitations.push(format!(
            "{} trace events were lost in the guest: its records in their time are partly unexplained",
            guest.events_lost
        ));
    }
}

/// At most [`MAX_TEXT`] characters of a text from the guest.
fn bounded(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests;
