/* Faults the library must survive without hurting the application:
 *   faults block   (default policy; ACLPROF_UNSUBSCRIBE_TIMEOUT_MS=500)
 *   faults slow    (default policy and timeout: a slow reader, which no timeout may hurry)
 *   faults drop    (ACLPROF_ON_FULL=drop, ACLPROF_BUFFER_RECORDS=256)        */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"
#include "harness.h"

static aclprofExtStats stats(void) {
    aclprofExtStats s;
    memset(&s, 0, sizeof s);
    CHECK_EQ(aclprofExtGetStats(&s), ACL_SUCCESS);
    return s;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void nap_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

typedef struct {
    uint32_t model;
    int fd[2];
    aclprofSubscribeConfig *cfg;
} Sub;

/* The library keeps &s->fd[1] until unsubscribe, so the Sub must not move. */
static void subscribe(Sub *s, const char *name) {
    CHECK_EQ(aclprofExtModelLoad(name, 0, &s->model), ACL_SUCCESS);
    CHECK_EQ(pipe(s->fd), 0);
    s->cfg = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &s->fd[1]);
    CHECK_EQ(aclprofModelSubscribe(s->model, s->cfg), ACL_SUCCESS);
}

static void report(uint32_t model, int n) {
    for (int i = 0; i < n; i++) CHECK_EQ(aclprofExtReportOp(model, "op", "Add", (uint64_t)i * 10, (uint64_t)i * 10 + 5), ACL_SUCCESS);
}

/* Reads everything up to EOF, counting records, optionally pausing between reads. */
static long drain(int fd, int pause_ms) {
    static char buf[8192];
    long bytes = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        bytes += n;
        if (pause_ms) nap_ms(pause_ms);
    }
    CHECK_EQ(bytes % 512, 0);
    return bytes / 512;
}

static void test_reader_closes_early(void) {
    aclprofExtStats before = stats();
    Sub s;
    subscribe(&s, "early-close");
    close(s.fd[0]); /* the reader goes away */
    report(s.model, 1000);
    CHECK_EQ(aclprofModelUnSubscribe(s.model), ACL_SUCCESS); /* and we are still alive: no SIGPIPE */
    CHECK_EQ(s.fd[1], -1);
    aclprofExtStats after = stats();
    CHECK_EQ(after.recordsReported - before.recordsReported, 1000);
    CHECK_EQ(after.recordsDropped - before.recordsDropped, 1000);
    CHECK_EQ(after.recordsDelivered - before.recordsDelivered, 0);
    aclprofDestroySubscribeConfig(s.cfg);
}

static void test_fd_closed_behind_our_back(void) {
    aclprofExtStats before = stats();
    Sub s;
    subscribe(&s, "closed-fd");
    close(s.fd[1]);
    report(s.model, 100);
    CHECK_EQ(aclprofModelUnSubscribe(s.model), ACL_SUCCESS);
    aclprofExtStats after = stats();
    CHECK_EQ(after.recordsDropped - before.recordsDropped, 100);
    close(s.fd[0]);
    aclprofDestroySubscribeConfig(s.cfg);
}

typedef struct {
    int fd;
    long got;
} Reader;

static void *slow_reader(void *arg) {
    Reader *r = (Reader *)arg;
    r->got = drain(r->fd, 1);
    return NULL;
}

static void test_nonblocking_fd_slow_reader_loses_nothing(void) {
    aclprofExtStats before = stats();
    uint32_t m;
    int fd[2];
    CHECK_EQ(aclprofExtModelLoad("slow", 0, &m), ACL_SUCCESS);
    CHECK_EQ(pipe(fd), 0);
    CHECK_EQ(fcntl(fd[1], F_SETFL, O_NONBLOCK), 0);
    aclprofSubscribeConfig *cfg = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &fd[1]);
    CHECK_EQ(aclprofModelSubscribe(m, cfg), ACL_SUCCESS);
    Reader r = {fd[0], 0};
    pthread_t t;
    pthread_create(&t, NULL, slow_reader, &r);
    report(m, 3000);
    CHECK_EQ(aclprofExtFlush(), ACL_SUCCESS);
    CHECK_EQ(aclprofModelUnSubscribe(m), ACL_SUCCESS);
    pthread_join(t, NULL);
    CHECK_EQ(r.got, 3000);
    aclprofExtStats after = stats();
    CHECK_EQ(after.recordsDelivered - before.recordsDelivered, 3000);
    CHECK_EQ(after.recordsDropped - before.recordsDropped, 0);
    close(fd[0]);
    aclprofDestroySubscribeConfig(cfg);
}

/* Unsubscribe does not hang on a reader that never reads; the rest is counted as dropped. */
static void test_stalled_reader_unsubscribe_is_bounded(int n) {
    aclprofExtStats before = stats();
    Sub s;
    subscribe(&s, "stalled");
    report(s.model, n);
    double t0 = now_s();
    CHECK_EQ(aclprofModelUnSubscribe(s.model), ACL_SUCCESS);
    double took = now_s() - t0;
    CHECK(took < 5.0);
    CHECK_EQ(s.fd[1], -1);
    long got = drain(s.fd[0], 0); /* what did reach the pipe, then EOF */
    aclprofExtStats after = stats();
    long reported = (long)(after.recordsReported - before.recordsReported);
    long delivered = (long)(after.recordsDelivered - before.recordsDelivered);
    long dropped = (long)(after.recordsDropped - before.recordsDropped);
    CHECK_EQ(reported, n);
    CHECK_EQ(delivered + dropped, reported); /* exactly */
    CHECK_EQ(got, delivered);
    CHECK(dropped > 0);
    CHECK_EQ(after.recordsReported, after.recordsDelivered + after.recordsDropped);
    close(s.fd[0]);
    aclprofDestroySubscribeConfig(s.cfg);
}

/* ACLPROF_ON_FULL=drop: records dropped because the user chose to drop are counted, and
 * aclprofExtFlush still succeeds; a reader that goes away is a failure, under either policy. */
static void test_flush_after_chosen_drops_succeeds(void) {
    aclprofExtStats before = stats();
    Sub s;
    subscribe(&s, "chosen-drops");
    report(s.model, 20000); /* nobody reads yet: the pipe and the lanes fill, the rest drops */
    Reader r = {s.fd[0], 0};
    pthread_t t;
    pthread_create(&t, NULL, slow_reader, &r);
    CHECK_EQ(aclprofExtFlush(), ACL_SUCCESS);
    aclprofExtStats mid = stats();
    long dropped = (long)(mid.recordsDropped - before.recordsDropped);
    long delivered = (long)(mid.recordsDelivered - before.recordsDelivered);
    CHECK(dropped > 0);
    CHECK_EQ((long)(mid.recordsReported - before.recordsReported), 20000);
    CHECK_EQ(delivered + dropped, 20000);
    CHECK_EQ(aclprofModelUnSubscribe(s.model), ACL_SUCCESS);
    pthread_join(t, NULL);
    CHECK_EQ(r.got, delivered);
    close(s.fd[0]);
    aclprofDestroySubscribeConfig(s.cfg);

    Sub gone;
    subscribe(&gone, "reader-gone");
    close(gone.fd[0]); /* the reader goes away: what is reported is lost, not chosen */
    report(gone.model, 10);
    CHECK_EQ(aclprofExtFlush(), ACL_ERROR_PROFILING_FAILURE);
    CHECK_EQ(aclprofModelUnSubscribe(gone.model), ACL_SUCCESS);
    aclprofExtStats after = stats();
    CHECK_EQ(after.recordsReported, after.recordsDelivered + after.recordsDropped);
    aclprofDestroySubscribeConfig(gone.cfg);
}

static void test_block_mode_stalled(void) { test_stalled_reader_unsubscribe_is_bounded(1000); }
static void test_drop_mode_stalled(void) { test_stalled_reader_unsubscribe_is_bounded(20000); }

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "drop") == 0) {
        RUN(test_drop_mode_stalled);
        RUN(test_reader_closes_early);
        RUN(test_flush_after_chosen_drops_succeeds);
    } else if (argc > 1 && strcmp(argv[1], "slow") == 0) {
        RUN(test_nonblocking_fd_slow_reader_loses_nothing);
    } else {
        RUN(test_reader_closes_early);
        RUN(test_fd_closed_behind_our_back);
        RUN(test_block_mode_stalled);
    }
    DONE();
}
