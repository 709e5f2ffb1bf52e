#!/usr/bin/env python3
"""rtvirt measure net client --stream vs iperf3 on loopback, interleaved rounds, same message
sizes (TCP 128 KiB writes: iperf3's default -l; UDP 1472-byte datagrams): TCP as fast as possible,
TCP paced to TCP_RATE (default 10G: below both senders' CPU-bound rate here, so the tools, not their
senders' per-write cost, are compared), UDP as fast as possible (iperf3 -b 0) and paced to RATE
(rtvirt --bandwidth RATE, iperf3 -b RATE; default 1G). Prints the received bandwidth, UDP loss and sender CPU of each tool per round and the
median ratio of the received bandwidths.

With PIN=1 in the environment, both tools' senders run on CPU 0 and receivers on CPU 1 (taskset):
the same placement for both, instead of wherever the scheduler puts them in each round.

usage: [PIN=1] stream_vs_iperf3.py RTVIRT_BINARY [ROUNDS] [SECONDS] [RATE] [TCP_RATE]
"""
import os
import json
import statistics
import subprocess
import sys
import time

rtvirt, rounds, seconds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3, sys.argv[3] if len(sys.argv) > 3 else "5"
rate = sys.argv[4] if len(sys.argv) > 4 else "1G"
tcp_rate = sys.argv[5] if len(sys.argv) > 5 else "10G"
pinned = os.environ.get("PIN") == "1"


def on(cpu, args):
    return ["taskset", "-c", str(cpu)] + args if pinned else args


def pace(udp):
    return rate if udp else tcp_rate


def iperf3(udp, paced):
    port = "5299"
    server = subprocess.Popen(on(1, ["iperf3", "-s", "-1", "-p", port]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    args = ["iperf3", "-c", "127.0.0.1", "-p", port, "-t", seconds, "-J"]
    args += ["-u", "-b", rate if paced else "0", "-l", "1472"] if udp else ["-l", "128K"] + (["-b", tcp_rate] if paced else [])
    out = json.loads(subprocess.run(on(0, args), capture_output=True, text=True, check=True).stdout)
    server.wait(timeout=10)
    end = out["end"]
    cpu = end["cpu_utilization_percent"]["host_total"] / 100
    if udp:
        s = end["sum"]
        return s["bits_per_second"] * (1 - s["lost_percent"] / 100), s["lost_percent"] / 100, cpu
    return end["sum_received"]["bits_per_second"], None, cpu


def rtvirt_stream(udp, paced):
    port = "5298"
    proto = "--udp" if udp else "--tcp"
    server = subprocess.Popen(on(1, [rtvirt, "measure", "net", "server", "--listen", f"127.0.0.1:{port}", proto,
                                      "--duration", f"{int(seconds) + 10}s"]), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    server.stderr.readline()
    args = [rtvirt, "measure", "net", "client", "--stream", proto, "--connect", f"127.0.0.1:{port}",
            "--duration", f"{seconds}s", "--format", "json"] + (["--bandwidth", pace(udp)] if paced else [])
    out = json.loads(subprocess.run(on(0, args), capture_output=True, text=True, check=True).stdout)["stream"]
    server.terminate()
    server.wait()
    return out["received_bits_per_second"], out.get("loss_ratio"), out["sender_cpu_utilisation"]


for udp, paced in ((False, False), (False, True), (True, False), (True, True)):
    name = ("UDP 1472 B" if udp else "TCP 128 KiB") + (f" paced to {pace(udp)}bit/s" if paced else " unpaced")
    ratios = []
    for r in range(rounds):
        ours, our_loss, our_cpu = rtvirt_stream(udp, paced)
        theirs, their_loss, their_cpu = iperf3(udp, paced)
        ratios.append(ours / theirs)
        loss = f", loss rtvirt {our_loss:.1%} iperf3 {their_loss:.1%}" if udp else ""
        print(f"{name} round {r + 1}: received rtvirt {ours / 1e9:.3f} Gbit/s, iperf3 {theirs / 1e9:.3f} Gbit/s, "
              f"ratio {ours / theirs:.3f}{loss}; sender CPU rtvirt {our_cpu:.0%} (sending thread) "
              f"iperf3 {their_cpu:.0%} (process)", flush=True)
    print(f"{name}: median ratio rtvirt/iperf3 {statistics.median(ratios):.3f}", flush=True)
