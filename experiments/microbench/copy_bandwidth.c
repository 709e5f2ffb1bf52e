/* Copy cost per KiB of packet-sized memcpy on this machine: SIZE-byte copies walking through a
 * SPAN-byte source and destination (a ring of packet buffers, as a vhost or socket copy does),
 * hot (SPAN fits in L2) and streaming (SPAN far beyond L2). perf bench mem memcpy times one big
 * copy, not many packet-sized ones, hence this small program.
 * Usage: copy_bandwidth [SIZE]   prints ns per KiB, min over 200 short runs (a shared machine preempts long ones), for each span */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static double per_kib(size_t size, size_t span, long copies) {
    /* the copies walk on through the span from run to run: a streaming span stays cold */
    char *src = malloc(span), *dst = malloc(span);
    memset(src, 1, span);
    memset(dst, 2, span);
    size_t slots = span / size;
    double best = 1e18;
    for (int run = 0; run < 200; run++) {
        double t0 = now_ns();
        for (long i = 0; i < copies; i++) {
            size_t at = (size_t)((run * copies + i) % (long)slots) * size;
            memcpy(dst + at, src + at, size);
            __asm__ volatile("" ::: "memory");
        }
        double ns = (now_ns() - t0) / copies / (size / 1024.0);
        if (ns < best) best = ns;
    }
    free(src);
    free(dst);
    return best;
}

int main(int argc, char **argv) {
    size_t size = argc > 1 ? (size_t)atol(argv[1]) : 1448;
    printf("copy_ns_per_kib hot (64 KiB span) %.1f\n", per_kib(size, 64 << 10, 20000));
    printf("copy_ns_per_kib streaming (256 MiB span) %.1f\n", per_kib(size, 256L << 20, 20000));
    return 0;
}
