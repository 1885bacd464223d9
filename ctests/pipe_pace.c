/* A pipe holds as many records as its size, at any pace of reporting, and nobody waits for
 * a reader while it has room. The CANN flow in its simplest form, as a C inference app
 * writes it: create a pipe, subscribe, execute, unsubscribe, then read the pipe.
 *
 *   pipe_pace gaps   for gaps of 0, 0.1, 0.5 and 2 ms between ops and N = 100 and N = the
 *                    pipe's size in records, with a default pipe and with one whose reader
 *                    raised its size to 256 KiB before subscribing: subscribe, report N
 *                    ops gap apart, unsubscribe, then read. Every record, in order; neither
 *                    the report calls nor the unsubscribe waited for the reader
 *                    (aclprofExtGetWaits); reported == delivered.
 *   pipe_pace late   a reporter paced like a model's executions (an execution of K ops
 *                    100 us apart every 20 ms) against a reader that reads only every
 *                    200 ms, for a default pipe (K = 12) and one raised to 1 MiB
 *                    (K = 125): nothing lost, every record in order, and the reporting
 *                    thread never waited (the pipe had room each time).
 *
 * Each test prints how long its unsubscribes took and what waits it saw. */
#define _POSIX_C_SOURCE 200809L
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"
#include "harness.h"

#define REC 512

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static aclprofExtWaits waits(void) {
    aclprofExtWaits w;
    memset(&w, 0, sizeof w);
    CHECK_EQ(aclprofExtGetWaits(&w), ACL_SUCCESS);
    return w;
}

static aclprofExtStats stats(void) {
    aclprofExtStats s;
    memset(&s, 0, sizeof s);
    CHECK_EQ(aclprofExtGetStats(&s), ACL_SUCCESS);
    return s;
}

/* Checks that `buf` holds records named "op<first>", "op<first+1>", ...; returns how many. */
static uint32_t check_in_order(const char *buf, size_t len, uint32_t first) {
    uint32_t n = 0;
    CHECK_EQ(len % REC, 0);
    if (aclprofGetOpNum(buf, len, &n) != ACL_SUCCESS || (size_t)n * REC != len) {
        CHECK(!"whole, verified records");
        return 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        char name[64];
        unsigned seq = 0;
        CHECK_EQ(aclprofGetOpName(buf, len, i, name, sizeof name), ACL_SUCCESS);
        if (sscanf(name, "op%u", &seq) != 1 || seq != first + i) {
            fprintf(stderr, "record %u: %s, expected op%u\n", first + i, name, first + i);
            CHECK(!"every record once, in order");
            return i;
        }
    }
    return n;
}

/* A pipe of `size` bytes (0: the default), its write end in *w; returns the read end. */
static int make_pipe(int size, int *w) {
    int p[2];
    CHECK_EQ(pipe(p), 0);
    if (size > 0) CHECK_EQ(fcntl(p[1], F_SETPIPE_SZ, size), size);
    *w = p[1];
    return p[0];
}

static void report(uint32_t model, uint32_t seq) {
    char name[32];
    snprintf(name, sizeof name, "op%u", seq);
    uint64_t t = aclprofExtNowNs();
    CHECK_EQ(aclprofExtReportOp(model, name, "Add", t, t + 1000), ACL_SUCCESS);
}

/* ---- gaps ---- */

static void one_gap_run(uint32_t model, int size, uint32_t n, long gap_us) {
    int w = -1;
    int r = make_pipe(size, &w);
    int pipe_records = fcntl(w, F_GETPIPE_SZ) / REC;
    aclprofSubscribeConfig *cfg = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &w);
    CHECK_EQ(aclprofModelSubscribe(model, cfg), ACL_SUCCESS);
    aclprofExtWaits w0 = waits();
    aclprofExtStats s0 = stats();
    for (uint32_t i = 0; i < n; i++) {
        report(model, i);
        if (gap_us) sleep_us(gap_us);
    }
    double t = now_s();
    CHECK_EQ(aclprofModelUnSubscribe(model), ACL_SUCCESS);
    double took = now_s() - t;
    aclprofExtWaits w1 = waits();
    aclprofExtStats s1 = stats();
    CHECK_EQ(w, -1); /* the library closed the write end */
    size_t want = (size_t)n * REC;
    char *buf = malloc(want + REC);
    size_t have = 0;
    for (;;) {
        ssize_t k = read(r, buf + have, want + REC - have);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        have += (size_t)k;
        if (have > want) break;
    }
    close(r);
    printf("pipe of %d records, %u ops %ld us apart: read %zu records; unsubscribe %.1f ms; "
           "waits: report %llu, unsubscribe %llu\n",
           pipe_records, n, gap_us, have / REC, took * 1e3,
           (unsigned long long)(w1.reportWaits - w0.reportWaits),
           (unsigned long long)(w1.flushWaits - w0.flushWaits));
    CHECK_EQ(have, want);
    CHECK_EQ(check_in_order(buf, have / REC * REC, 0), n);
    CHECK_EQ(s1.recordsReported - s0.recordsReported, n);
    CHECK_EQ(s1.recordsDelivered - s0.recordsDelivered, n);
    CHECK_EQ(s1.recordsDropped - s0.recordsDropped, 0);
    /* What is left fits the pipe: nobody waited for the reader, who reads only afterwards. */
    CHECK_EQ(w1.reportWaits - w0.reportWaits, 0);
    CHECK_EQ(w1.flushWaits - w0.flushWaits, 0);
    /* The timeout is 30 s; without waiting, unsubscribe is work of a few milliseconds (a
     * tenth of a second under the sanitizers on a loaded machine). */
    CHECK(took < 10.0);
    free(buf);
    aclprofDestroySubscribeConfig(cfg);
}

static void gaps(void) {
    uint32_t model = 0;
    CHECK_EQ(aclprofExtModelLoad("gaps", 0, &model), ACL_SUCCESS);
    const long gap_us[] = {0, 100, 500, 2000};
    const int sizes[] = {0, 256 * 1024};
    for (int s = 0; s < 2; s++) {
        int w = -1, r = make_pipe(sizes[s], &w);
        uint32_t full = (uint32_t)(fcntl(w, F_GETPIPE_SZ) / REC);
        close(r);
        close(w);
        const uint32_t ns[] = {100, full};
        for (int k = 0; k < 2; k++)
            for (int g = 0; g < 4; g++) one_gap_run(model, sizes[s], ns[k], gap_us[g]);
    }
    CHECK_EQ(aclprofExtModelUnload(model), ACL_SUCCESS);
}

/* ---- late ---- */

typedef struct {
    int fd;
    size_t cap;
    char *buf;
    size_t have;
    int reads;
} LateReader;

/* Reads whatever the pipe holds, every 200 ms, until its writer is gone. */
static void *late_reader(void *arg) {
    LateReader *lr = arg;
    for (;;) {
        sleep_us(200 * 1000);
        lr->reads++;
        for (;;) {
            ssize_t k = read(lr->fd, lr->buf + lr->have, lr->cap - lr->have);
            if (k < 0 && errno == EINTR) continue;
            if (k < 0 && errno == EAGAIN) break;
            if (k <= 0) return NULL; /* the end, or an error */
            lr->have += (size_t)k;
            if (lr->have == lr->cap) return NULL;
        }
    }
}

static void one_late_run(uint32_t model, int size, uint32_t per_exec, int executions) {
    int w = -1;
    int r = make_pipe(size, &w);
    int pipe_records = fcntl(w, F_GETPIPE_SZ) / REC;
    CHECK_EQ(fcntl(r, F_SETFL, O_NONBLOCK), 0);
    uint32_t n = per_exec * (uint32_t)executions;
    LateReader lr = {r, (size_t)n * REC + REC, malloc((size_t)n * REC + REC), 0, 0};
    aclprofSubscribeConfig *cfg = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &w);
    CHECK_EQ(aclprofModelSubscribe(model, cfg), ACL_SUCCESS);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, late_reader, &lr), 0);
    aclprofExtWaits w0 = waits();
    aclprofExtStats s0 = stats();
    uint32_t seq = 0;
    for (int e = 0; e < executions; e++) {
        for (uint32_t i = 0; i < per_exec; i++) {
            report(model, seq++);
            sleep_us(100);
        }
        sleep_us(20000);
    }
    aclprofExtWaits w1 = waits();
    double t = now_s();
    CHECK_EQ(aclprofModelUnSubscribe(model), ACL_SUCCESS);
    double took = now_s() - t;
    aclprofExtStats s1 = stats();
    pthread_join(th, NULL);
    close(r);
    printf("pipe of %d records, %d executions of %u ops, reader every 200 ms (%d reads): read "
           "%zu records; report calls waited %llu times (%.3f ms); unsubscribe %.1f ms\n",
           pipe_records, executions, per_exec, lr.reads, lr.have / REC,
           (unsigned long long)(w1.reportWaits - w0.reportWaits),
           (double)(w1.reportWaitNs - w0.reportWaitNs) / 1e6, took * 1e3);
    CHECK_EQ(lr.have, (size_t)n * REC);
    CHECK_EQ(check_in_order(lr.buf, lr.have / REC * REC, 0), n);
    CHECK_EQ(s1.recordsReported - s0.recordsReported, n);
    CHECK_EQ(s1.recordsDelivered - s0.recordsDelivered, n);
    CHECK_EQ(s1.recordsDropped - s0.recordsDropped, 0);
    /* The pipe holds more than a reader's interval of ops, and the lane holds what waits
     * beyond it many times over: a reporting thread has no reason to wait. */
    CHECK_EQ(w1.reportWaits - w0.reportWaits, 0);
    free(lr.buf);
    aclprofDestroySubscribeConfig(cfg);
}

static void late(void) {
    uint32_t model = 0;
    CHECK_EQ(aclprofExtModelLoad("late", 0, &model), ACL_SUCCESS);
    one_late_run(model, 0, 12, 60);
    one_late_run(model, 1024 * 1024, 125, 60);
    CHECK_EQ(aclprofExtModelUnload(model), ACL_SUCCESS);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "gaps") == 0) {
        RUN(gaps);
    } else if (strcmp(mode, "late") == 0) {
        RUN(late);
    } else {
        fprintf(stderr, "usage: pipe_pace gaps|late\n");
        return 2;
    }
    DONE();
}
