//! What each thread of the network path does next, and what its finished work changes:
//! hard IRQ / IRQ threads (NAPI scheduling onto the list chosen by priority), NET_RX delivery
//! (bridge to a tap, or the host stack for outsourced sockets and host processes), the vhost
//! backend (RX copy into guest memory in batches, virtual interrupt injection, TX copy, bridge
//! and NIC), the vCPU (VM entry, guest IRQ, guest NAPI + IP/UDP/TCP, the server, the send path by
//! kick or by outsourced RPC, HLT) and the non-virtualized server process.

use super::softirq::NAPI_WEIGHT;
use super::{
    Action, Next, Packet, PacketQueue, RespPhase, Role, Sim, ThreadIndex, ThreadState, Work, BACKLOG_LIMIT, TAP_LIMIT,
};
use rtvirt_model::scenario::net::{IrqMode, SocketMode, SoftirqMode};
use rtvirt_model::Nanos;

fn work(cost: Nanos, action: Action) -> Next {
    Next::Work(Work { left: cost, action })
}

impl Sim {
    /// The next work of thread `t` (called when it is on a core).
    pub(crate) fn next_work(&mut self, t: ThreadIndex) -> Next {
        match self.threads[t].role {
            Role::IrqCtx(c) => self.irqctx_next(t, c),
            Role::IrqThread(rxq) => self.irq_thread_next(t, rxq),
            Role::Ksoftirqd(_) => self.softirq_next(t).unwrap_or(Next::Sleep),
            Role::Vhost(vm) => self.vhost_next(t, vm),
            Role::Vcpu(vm) => self.vcpu_next(vm),
        }
    }

    fn irqctx_next(&mut self, t: ThreadIndex, c: usize) -> Next {
        loop {
            match self.cores[c].irq_jobs.pop_front() {
                Some(Some(rxq)) => {
                    return match self.net.irq {
                        IrqMode::HardIrq => work(self.net.costs.hardirq, Action::HardIrq(rxq)),
                        IrqMode::Threaded => work(self.net.costs.wakeup, Action::TopHalf(rxq)),
                    }
                }
                Some(None) => {
                    if self.net.irq == IrqMode::HardIrq && !self.lists[Self::list_id(c, false)].napis.is_empty() {
                        self.raise(t, Self::list_id(c, false));
                    }
                }
                None => return self.softirq_next(t).unwrap_or(Next::Sleep),
            }
        }
    }

    fn irq_thread_next(&mut self, t: ThreadIndex, rxq: usize) -> Next {
        if let Some(n) = self.softirq_next(t) {
            return n;
        }
        if self.threads[t].irq_pending > 0 {
            self.threads[t].irq_pending -= 1;
            return work(self.net.costs.hardirq, Action::HardIrq(rxq));
        }
        self.exit_or_sleep(t)
    }

    fn exit_or_sleep(&mut self, t: ThreadIndex) -> Next {
        if std::mem::take(&mut self.threads[t].exit_due) {
            return work(self.net.costs.thread_exit, Action::Exit);
        }
        Next::Sleep
    }

    /// CPU cost of NET_RX delivering `pkts` (driver, bridge or host stack, waking the consumer),
    /// summed per run of consecutive packets of one flow (one VM, one consumer).
    pub(crate) fn rx_cost(&mut self, pkts: &PacketQueue) -> Nanos {
        let mut woken = std::mem::take(&mut self.scratch);
        woken.clear();
        let c = &self.net.costs;
        let mut cost = Nanos::ZERO;
        for run in pkts.runs() {
            let vm = self.net.flows[run.pkt.flow as usize].vm;
            let v = &self.vms[vm];
            let per_packet = c.rx_per_packet
                + match v.socket {
                    SocketMode::Vhost => c.bridge_per_packet,
                    SocketMode::Host => c.host_udp_rx,
                    // the bridge hands it to the veth pair, whose netif_rx re-enters NET_RX
                    SocketMode::Container => c.bridge_per_packet + c.rx_per_packet + c.host_udp_rx,
                    SocketMode::Outsourced => c.host_udp_rx + c.virq_inject,
                    SocketMode::OutsourcedRt => c.host_udp_rx + c.event_notify,
                };
            cost += Nanos(per_packet.0 * run.count as u64);
            let consumer = v.vhost.unwrap_or(v.vcpu);
            if !woken.contains(&consumer) && self.threads[consumer].state == ThreadState::Sleeping {
                woken.push(consumer);
                cost += c.wakeup;
            }
        }
        self.scratch = woken;
        cost
    }

    /// CPU cost of NET_RX forwarding `n` backlog packets (process_backlog: bridge, NIC xmit).
    pub(crate) fn backlog_cost(&self, n: usize) -> Nanos {
        let c = &self.net.costs;
        Nanos((c.bridge_per_packet.0 + c.nic_xmit.0) * n as u64)
    }

    fn vhost_next(&mut self, t: ThreadIndex, vm: usize) -> Next {
        if let Some(n) = self.softirq_next(t) {
            return n;
        }
        let c = self.net.costs;
        let batch = self.vms[vm].batch;
        if !self.vms[vm].txq.is_empty() {
            let n = batch.min(self.vms[vm].txq.len());
            let mut pkts = self.take_pkts();
            self.vms[vm].txq.move_front(n, &mut pkts);
            let bytes = pkts.bytes();
            return work(Nanos(c.vhost_per_packet.0 * n as u64) + self.copy_cost(bytes), Action::VhostTx { pkts });
        }
        if std::mem::take(&mut self.vms[vm].need_inject) {
            return work(c.virq_inject, Action::Inject { vm });
        }
        let room = self.vms[vm].ring_cap.saturating_sub(self.vms[vm].ring.len());
        if !self.vms[vm].tap.is_empty() && room > 0 {
            let n = batch.min(room).min(self.vms[vm].tap.len());
            let mut pkts = self.take_pkts();
            self.vms[vm].tap.move_front(n, &mut pkts);
            let bytes = pkts.bytes();
            return work(Nanos(c.vhost_per_packet.0 * n as u64) + self.copy_cost(bytes), Action::VhostRx { vm, pkts });
        }
        self.exit_or_sleep(t)
    }

    fn vcpu_next(&mut self, vm: usize) -> Next {
        let c = self.net.costs;
        let socket = self.vms[vm].socket;
        let host = socket.is_host_process();
        if let Some((_, phase)) = self.vms[vm].resp {
            let cost = match phase {
                RespPhase::Kick => c.vm_exit + c.wakeup,
                RespPhase::RpcExit => c.vm_exit,
                RespPhase::HostSend if socket == SocketMode::Container => {
                    c.host_udp_tx + c.bridge_per_packet + c.rx_per_packet + c.nic_xmit
                }
                RespPhase::HostSend if host => c.host_udp_tx + c.nic_xmit,
                RespPhase::HostSend => c.rpc + c.host_udp_tx + c.nic_xmit,
            };
            let (pkt, _) = self.vms[vm].resp.take().expect("checked");
            let action = match phase {
                RespPhase::Kick => Action::Kick { vm, pkt },
                RespPhase::RpcExit => Action::RpcExit { vm, pkt },
                RespPhase::HostSend => Action::HostSend { pkt },
            };
            return work(cost, action);
        }
        let v = &self.vms[vm];
        let has_work = v.virq || !v.ring.is_empty() || !v.sock.is_empty();
        if !host && !v.in_guest {
            if has_work {
                return work(c.vm_entry, Action::VmEntry { vm });
            }
            if std::mem::take(&mut self.vms[vm].needs_resume) {
                return work(c.vm_entry + c.vm_exit, Action::Halt { vm });
            }
            return Next::Sleep;
        }
        let debt = std::mem::take(&mut self.threads[self.vms[vm].vcpu].debt);
        let v = &self.vms[vm];
        if v.virq {
            return work(c.guest_hardirq + debt, Action::GuestIrq { vm });
        }
        let now = self.event_queue.now();
        if !v.ring.is_empty() {
            let n = NAPI_WEIGHT.min(v.ring.len());
            let mut pkts = self.take_pkts();
            self.vms[vm].ring.move_front(n, &mut pkts);
            pkts.for_each_mut(|p| stamp_entry(p, now));
            let mut cost = Nanos::ZERO;
            for run in pkts.runs() {
                let per_packet = if self.flows[run.pkt.flow as usize].is_bulk() {
                    c.guest_tcp_rx_per_packet + self.copy_cost(run.pkt.bytes as u64)
                } else {
                    c.guest_udp_rx
                };
                cost += Nanos(per_packet.0 * run.count as u64);
            }
            return work(cost + debt, Action::GuestRx { vm, pkts });
        }
        if let Some(mut pkt) = self.vms[vm].sock.pop_front() {
            stamp_entry(&mut pkt, now);
            let service = self.service_time();
            let send_prep = match self.vms[vm].socket {
                SocketMode::Vhost => c.guest_udp_tx,
                SocketMode::Outsourced => c.rpc,
                SocketMode::OutsourcedRt => c.rpc + c.event_notify,
                SocketMode::Host | SocketMode::Container => Nanos::ZERO,
            };
            return work(self.copy_cost(pkt.bytes as u64) + service + send_prep + debt, Action::Serve { vm, pkt });
        }
        if !host {
            return work(c.vm_exit, Action::Halt { vm });
        }
        Next::Sleep
    }

    /// The server's service time: mean +- uniform jitter.
    fn service_time(&mut self) -> Nanos {
        let c = self.net.costs;
        let lo = c.app_service.saturating_sub(c.app_service_jitter);
        self.rng.uniform_nanos(lo, c.app_service + c.app_service_jitter)
    }

    /// Apply the effect of finished work of thread `t`.
    pub(crate) fn apply(&mut self, t: ThreadIndex, action: Action) {
        match action {
            Action::Nothing => {}
            Action::Exit => {}
            Action::TopHalf(rxq) => {
                let it = self.rxqs[rxq].irq_thread.expect("threaded mode has IRQ threads");
                self.threads[it].irq_pending += 1;
                self.wake(it);
            }
            Action::HardIrq(rxq) => {
                self.schedule_on_own_list(t, rxq);
                self.threads[t].exit_due = true;
            }
            Action::Poll { list, rxq, pkts } => {
                let n = pkts.len();
                let backlog = self.rxqs[rxq].backlog;
                for run in pkts.runs() {
                    if backlog {
                        (0..run.count).for_each(|_| self.response_out(run.pkt));
                    } else {
                        self.deliver_run(run.pkt, run.count);
                    }
                }
                self.give_pkts(pkts);
                self.after_poll(list, rxq, n);
            }
            Action::VhostRx { vm, mut pkts } => {
                self.copy_bytes(pkts.bytes());
                let was_empty = self.vms[vm].ring.is_empty();
                pkts.append_to(&mut self.vms[vm].ring);
                self.give_pkts(pkts);
                let vcpu = self.vms[vm].vcpu;
                if was_empty || self.threads[vcpu].state == ThreadState::Sleeping {
                    self.vms[vm].need_inject = true;
                }
                self.threads[t].exit_due = true;
            }
            Action::Inject { vm } => {
                self.vms[vm].virq = true;
                let vcpu = self.vms[vm].vcpu;
                self.wake(vcpu);
            }
            Action::VhostTx { pkts } => {
                self.copy_bytes(pkts.bytes());
                let backlog = self.cores[self.threads[t].core].backlog;
                for run in pkts.runs() {
                    // netif_rx: queued while the backlog holds fewer than netdev_max_backlog
                    let room = BACKLOG_LIMIT.saturating_sub(self.rxqs[backlog].ring.len());
                    let queued = room.min(run.count as usize) as u32;
                    self.rxqs[backlog].ring.push_n(run.pkt, queued);
                    self.rxqs[backlog].drops += (run.count - queued) as u64;
                    self.drop_pkts(run.pkt, run.count - queued);
                }
                self.give_pkts(pkts);
                if !self.rxqs[backlog].ring.is_empty() {
                    self.schedule_on_own_list(t, backlog);
                }
                self.threads[t].exit_due = true;
            }
            Action::VmEntry { vm } => {
                let now = self.event_queue.now();
                let v = &mut self.vms[vm];
                v.in_guest = true;
                v.ring.for_each_mut(|p| stamp_entry(p, now));
                v.sock.for_each_mut(|p| stamp_entry(p, now));
            }
            Action::GuestIrq { vm } => self.vms[vm].virq = false,
            Action::GuestRx { vm, pkts } => self.guest_rx_done(vm, pkts),
            Action::Serve { vm, pkt } => self.served(vm, pkt),
            Action::Kick { vm, pkt } => {
                let now = self.event_queue.now();
                let v = &mut self.vms[vm];
                v.in_guest = false;
                v.needs_resume = true;
                v.txq.push_back(Packet { t_exit: now, ..pkt });
                let vh = v.vhost.expect("kick needs a vhost backend");
                self.wake(vh);
            }
            Action::RpcExit { vm, pkt } => {
                let now = self.event_queue.now();
                let v = &mut self.vms[vm];
                v.in_guest = false;
                v.needs_resume = true;
                v.resp = Some((Packet { t_exit: now, ..pkt }, RespPhase::HostSend));
            }
            Action::HostSend { pkt } => {
                self.copy_bytes(pkt.bytes as u64);
                self.response_out(pkt);
            }
            Action::Halt { vm } => self.vms[vm].in_guest = false,
        }
    }

    /// napi_schedule `rxq` on the poll list of `t`'s core chosen by `t`'s priority (the
    /// rt_poll_list when partitioned and priority >= rtnet_prio) and raise NET_RX for `t`.
    fn schedule_on_own_list(&mut self, t: ThreadIndex, rxq: usize) {
        let c = self.threads[t].core;
        let rt = self.net.softirq == SoftirqMode::Partitioned
            && !matches!(self.threads[t].role, Role::IrqCtx(_))
            && self.effective_priority(t) >= self.net.rtnet_prio as i32;
        let list = Self::list_id(c, rt);
        self.napi_schedule(rxq, list);
        self.raise(t, list);
    }

    /// NET_RX hands one packet to its consumer: a VM's tap (vhost) or the host stack's socket.
    pub(super) fn deliver(&mut self, p: Packet) {
        let vm = self.net.flows[p.flow as usize].vm;
        match self.vms[vm].socket {
            SocketMode::Vhost => {
                if self.vms[vm].tap.len() >= TAP_LIMIT {
                    self.drop_pkt(p);
                    return;
                }
                self.vms[vm].tap.push_back(p);
                let vh = self.vms[vm].vhost.expect("vhost socket has a backend");
                self.wake(vh);
            }
            mode => {
                self.vms[vm].sock.push_back(p);
                if mode == SocketMode::Outsourced {
                    self.vms[vm].virq = true;
                }
                let vcpu = self.vms[vm].vcpu;
                self.wake(vcpu);
            }
        }
    }

    /// `n` copies of `p`, as `n` calls of [`Sim::deliver`]: one by one while a delivery may
    /// still wake the consumer (a woken consumer may take packets at once), then the rest
    /// together.
    pub(super) fn deliver_run(&mut self, p: Packet, n: u32) {
        for i in 0..n {
            if self.delivery_wakes_nobody(p) {
                self.deliver_quietly(p, n - i);
                return;
            }
            self.deliver(p);
        }
    }

    /// Whether [`Sim::deliver`] of `p` would wake no thread: the consumer is awake already, or
    /// the tap is full (a drop; only the consumer empties the tap).
    fn delivery_wakes_nobody(&self, p: Packet) -> bool {
        let v = &self.vms[self.net.flows[p.flow as usize].vm];
        let consumer = v.vhost.unwrap_or(v.vcpu);
        let asleep = matches!(self.threads[consumer].state, ThreadState::Sleeping | ThreadState::Blocked);
        !asleep || (v.socket == SocketMode::Vhost && v.tap.len() >= TAP_LIMIT)
    }

    /// [`Sim::deliver`] of `n` copies of `p` when none of them wakes a thread.
    fn deliver_quietly(&mut self, p: Packet, n: u32) {
        let vm = self.net.flows[p.flow as usize].vm;
        match self.vms[vm].socket {
            SocketMode::Vhost => {
                let queued = TAP_LIMIT.saturating_sub(self.vms[vm].tap.len()).min(n as usize) as u32;
                self.vms[vm].tap.push_n(p, queued);
                self.drop_pkts(p, n - queued);
            }
            mode => {
                self.vms[vm].sock.push_n(p, n);
                if mode == SocketMode::Outsourced {
                    self.vms[vm].virq = true;
                }
            }
        }
    }

    /// The guest's stack took `pkts` from its ring: requests go to the server's socket (in
    /// order), bulk segments are consumed by the receiving application.
    fn guest_rx_done(&mut self, vm: usize, mut bulk: PacketQueue) {
        let (flows, sock) = (&self.flows, &mut self.vms[vm].sock);
        bulk.split_off_where(|p| flows[p.flow as usize].is_bulk(), |r| sock.push_n(r.pkt, r.count));
        if !bulk.is_empty() {
            self.copy_bytes(bulk.bytes());
            self.consumed(&bulk);
        }
        self.give_pkts(bulk);
        if let Some(vh) = self.vms[vm].vhost {
            if !self.vms[vm].tap.is_empty() {
                self.wake(vh);
            }
        }
    }

    fn served(&mut self, vm: usize, pkt: Packet) {
        self.copy_bytes(pkt.bytes as u64);
        self.request_consumed(&pkt);
        let now = self.event_queue.now();
        let bytes = self.flows[pkt.flow as usize].response_bytes();
        let resp = Packet { bytes, ..pkt };
        self.vms[vm].resp = Some(match self.vms[vm].socket {
            SocketMode::Vhost => (resp, RespPhase::Kick),
            SocketMode::Outsourced | SocketMode::OutsourcedRt => (resp, RespPhase::RpcExit),
            SocketMode::Host | SocketMode::Container => (Packet { t_exit: now, ..resp }, RespPhase::HostSend),
        });
    }
}

fn stamp_entry(p: &mut Packet, now: Nanos) {
    if p.t_entry == Nanos::ZERO {
        p.t_entry = now;
    }
}
