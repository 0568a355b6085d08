/* The SwiftRL CPU baseline's loop (multiq.c in the SwiftRL authors' repository,
 * Gogineni et al., ISPASS 2024, arXiv 2405.03967): offline tabular Q-learning or SARSA
 * updates on one agent's table in double precision, single-threaded, compiled.
 * rldse's own code, written for rldse (rldse/studies/ckernel/__init__.py builds and runs it).
 *
 * Usage: tabular_update DATA ALPHA GAMMA PASSES REPEATS [QOUT]
 * DATA (little-endian): int32 n_states, int32 n_actions, int64 n, then int32 s[n],
 * int32 a[n], int32 next_s[n], int32 next_a[n] (SARSA's a', -1: greedy, i.e. Q-learning's
 * max), double r[n]. Each repeat starts from a zero table and runs PASSES passes in order;
 * its time (CLOCK_MONOTONIC, the loop only) is printed as nanoseconds per update. QOUT: the
 * last repeat's table as n_states * n_actions doubles.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *read_block(FILE *f, size_t size, const char *what) {
    void *p = malloc(size ? size : 1);
    if (p == NULL || fread(p, 1, size, f) != size) {
        fprintf(stderr, "tabular_update: cannot read %s\n", what);
        exit(2);
    }
    return p;
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: tabular_update DATA ALPHA GAMMA PASSES REPEATS [QOUT]\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (f == NULL) {
        fprintf(stderr, "tabular_update: cannot open %s\n", argv[1]);
        return 2;
    }
    int32_t head[2];
    int64_t n;
    if (fread(head, sizeof head, 1, f) != 1 || fread(&n, sizeof n, 1, f) != 1 || n < 1) {
        fprintf(stderr, "tabular_update: bad header in %s\n", argv[1]);
        return 2;
    }
    const int32_t ns = head[0], na = head[1];
    const size_t count = (size_t)n;
    int32_t *s = read_block(f, count * 4, "states");
    int32_t *a = read_block(f, count * 4, "actions");
    int32_t *sp = read_block(f, count * 4, "next states");
    int32_t *ap = read_block(f, count * 4, "next actions");
    double *r = read_block(f, count * 8, "rewards");
    fclose(f);
    const double alpha = atof(argv[2]), gamma = atof(argv[3]);
    const int passes = atoi(argv[4]), repeats = atoi(argv[5]);
    double *q = calloc((size_t)ns * (size_t)na, sizeof(double));
    if (q == NULL) return 2;
    for (int rep = 0; rep < repeats; rep++) {
        memset(q, 0, (size_t)ns * (size_t)na * sizeof(double));
        double t0 = now_ns();
        for (int p = 0; p < passes; p++) {
            for (size_t i = 0; i < count; i++) {
                double *row = q + (size_t)s[i] * na;
                const double *next = q + (size_t)sp[i] * na;
                double boot;
                if (ap[i] >= 0) {
                    boot = next[ap[i]];
                } else {
                    boot = next[0];
                    for (int k = 1; k < na; k++) boot = next[k] > boot ? next[k] : boot;
                }
                const double qa = row[a[i]];
                row[a[i]] = qa + alpha * (r[i] + gamma * boot - qa);
            }
        }
        double t1 = now_ns();
        printf("%s%.6g", rep ? " " : "", (t1 - t0) / ((double)count * passes));
    }
    printf("\n");
    if (argc > 6) {
        FILE *o = fopen(argv[6], "wb");
        if (o == NULL || fwrite(q, sizeof(double), (size_t)ns * (size_t)na, o)
                != (size_t)ns * (size_t)na) {
            fprintf(stderr, "tabular_update: cannot write %s\n", argv[6]);
            return 2;
        }
        fclose(o);
    }
    return 0;
}
