/* Per-packet CPU cost of the host UDP stack on this machine: one thread sends N datagrams of
 * SIZE bytes to its own loopback socket and receives each right away, so the time per packet
 * is sendto (UDP/IP output, loopback xmit, netif_rx) + NET_RX (process_backlog, IP/UDP input,
 * socket enqueue) + recvfrom (copy to user), with no context switch and no wake-up.
 * Written by hand because no packaged tool measures this one path without a second process
 * (netperf/sockperf add a wake-up and a context switch per packet).
 * Usage: udp_loopback [N] [SIZE]   prints "udp_loopback_ns_per_packet <min over 100 short runs: a shared machine preempts long ones>" */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000;
    int size = argc > 2 ? atoi(argv[2]) : 64;
    char buf[65536] = {0};
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || getsockname(s, (struct sockaddr *)&a, &len)) {
        perror("socket");
        return 2;
    }
    double best = 1e18;
    for (int run = 0; run < 100; run++) {
        double t0 = now_ns();
        for (long i = 0; i < n; i++) {
            if (sendto(s, buf, size, 0, (struct sockaddr *)&a, sizeof a) != size || recv(s, buf, sizeof buf, 0) != size) {
                perror("sendto/recv");
                return 2;
            }
        }
        double per = (now_ns() - t0) / n;
        if (per < best) best = per;
    }
    printf("udp_loopback_ns_per_packet %.0f (size %d)\n", best, size);
    close(s);
    return 0;
}
