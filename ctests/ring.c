/* Shared-memory ring subscriptions: a reader in a second process decodes every op of a
 * simulated model run through the ring, in place, with the standard accessors; the drop
 * policy counts exactly; a detached reader never blocks the producer.
 *   ring MODEL.json               the tests (default policy)
 *   ring MODEL.json drop          ACLPROF_ON_FULL=drop: exact drop counts
 *   ring reader PATH N            (internal) the second-process reader
 *   ring producer PATH N          (internal) a producer that waits to be killed
 *   ring reader-then-stop PATH    (internal) a reader that stops releasing            */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"
#include "harness.h"

#include <signal.h>

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

extern char **environ;
static const char *g_model_path;
static const char *g_self;

/* Reads the ring to its end; checks every record; returns how many it read. */
static long read_all(aclprofExtRing *ring, uint64_t *sum_duration) {
    long n = 0;
    for (;;) {
        const void *recs = NULL;
        size_t len = 0;
        aclError e = aclprofExtRingAcquire(ring, 64, 200, &recs, &len);
        if (e == ACL_ERROR_PROF_NOT_RUN) break; /* end of stream */
        CHECK_EQ(e, ACL_SUCCESS);
        if (e != ACL_SUCCESS) break;
        uint32_t num = 0;
        if (len == 0) continue;
        CHECK_EQ(aclprofGetOpNum(recs, len, &num), ACL_SUCCESS);
        for (uint32_t i = 0; i < num; i++) {
            size_t nl = 0;
            CHECK_EQ(aclprofGetOpNameLen(recs, len, i, &nl), ACL_SUCCESS);
            char name[300];
            CHECK_EQ(aclprofGetOpName(recs, len, i, name, sizeof name), ACL_SUCCESS);
            *sum_duration += aclprofGetOpDuration(recs, len, i);
        }
        n += num;
        CHECK_EQ(aclprofExtRingRelease(ring, len), ACL_SUCCESS);
    }
    return n;
}

/* `ready_fd` >= 0: a pipe to say "attached" on, so the producer does not take a slow start
 * (a sanitized process on a loaded machine) for a reader that stopped reading. */
static int reader_main(const char *path, long expect, int ready_fd) {
    aclprofExtRing *ring = NULL;
    if (aclprofExtRingAttach(path, -1, &ring) != ACL_SUCCESS) return 10;
    if (ready_fd >= 0) {
        CHECK_EQ(write(ready_fd, "r", 1), 1);
        close(ready_fd);
    }
    uint64_t sum = 0;
    long n = read_all(ring, &sum);
    aclprofExtRingDetach(ring);
    printf("reader: %ld records, %llu ns\n", n, (unsigned long long)sum);
    return n == expect && g_failures == 0 ? 0 : 11;
}

static void test_second_process_reads_every_op(void) {
    uint32_t m = 0;
    CHECK_EQ(aclprofExtSimModelLoad(g_model_path, &m), ACL_SUCCESS);
    int fd = -1;
    CHECK_EQ(aclprofExtRingSubscribe(m, NULL, 64, &fd), ACL_SUCCESS); /* 64 slots: wraps often */
    CHECK(fd >= 0);
    char path[64], count[32], ready_arg[16];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)getpid(), fd);
    const int executions = 40;
    snprintf(count, sizeof count, "%d", executions * 5);
    int ready[2];
    CHECK_EQ(pipe(ready), 0);
    snprintf(ready_arg, sizeof ready_arg, "%d", ready[1]);
    char *args[] = {(char *)g_self, "reader", path, count, ready_arg, NULL};
    pid_t child;
    CHECK_EQ(posix_spawn(&child, g_self, NULL, NULL, args, environ), 0);
    close(ready[1]);
    char said = 0;
    CHECK_EQ(read(ready[0], &said, 1), 1); /* the reader is attached */
    close(ready[0]);
    for (int i = 0; i < executions; i++) CHECK_EQ(aclprofExtSimModelExecute(m), ACL_SUCCESS);
    CHECK_EQ(aclprofModelUnSubscribe(m), ACL_SUCCESS); /* flushes into the ring, then closes */
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    aclprofExtStats st;
    CHECK_EQ(aclprofExtGetStats(&st), ACL_SUCCESS);
    CHECK_EQ(st.recordsDropped, 0);
    CHECK_EQ(aclprofExtModelUnload(m), ACL_SUCCESS);
}

/* Loads a model named `name`, subscribes it to a new memfd ring of `capacity` records and
 * attaches a reader to it. */
static aclprofExtRing *attached_ring(const char *name, uint32_t capacity, uint32_t *model) {
    CHECK_EQ(aclprofExtModelLoad(name, 0, model), ACL_SUCCESS);
    int fd = -1;
    CHECK_EQ(aclprofExtRingSubscribe(*model, NULL, capacity, &fd), ACL_SUCCESS);
    aclprofExtRing *ring = NULL;
    CHECK_EQ(aclprofExtRingAttach(NULL, fd, &ring), ACL_SUCCESS);
    return ring;
}

/* Reports n 5-ns "Add" ops for model m. */
static void report_ops(uint32_t m, int n) {
    for (int i = 0; i < n; i++) CHECK_EQ(aclprofExtReportOp(m, "op", "Add", (uint64_t)i * 10, (uint64_t)i * 10 + 5), ACL_SUCCESS);
}

static void test_detached_reader_does_not_block(void) {
    uint32_t m = 0;
    aclprofExtRing *ring = attached_ring("detached", 8, &m);
    CHECK_EQ(aclprofExtRingDetach(ring), ACL_SUCCESS);
    CHECK_EQ(aclprofExtRingDetach(ring), ACL_ERROR_INVALID_PARAM); /* handle gone */
    aclprofExtStats before, after;
    aclprofExtGetStats(&before);
    report_ops(m, 500);
    CHECK_EQ(aclprofModelUnSubscribe(m), ACL_SUCCESS); /* returns: nobody to wait for */
    aclprofExtGetStats(&after);
    CHECK_EQ(after.recordsReported - before.recordsReported, 500);
    CHECK_EQ((after.recordsDelivered - before.recordsDelivered) + (after.recordsDropped - before.recordsDropped), 500);
    CHECK(after.recordsDropped - before.recordsDropped >= 500 - 8);
}

/* A reader that stays attached but stops releasing: unsubscribe still returns, after
 * ACLPROF_UNSUBSCRIBE_TIMEOUT_MS (500 ms in this run), counting the rest as dropped. */
static void test_stalled_reader_unsubscribe_is_bounded(void) {
    uint32_t m = 0;
    aclprofExtRing *ring = attached_ring("stalled-ring", 8, &m);
    aclprofExtStats before, after;
    aclprofExtGetStats(&before);
    report_ops(m, 100);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_EQ(aclprofModelUnSubscribe(m), ACL_SUCCESS);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECK(took < 5.0);
    aclprofExtGetStats(&after);
    CHECK_EQ(after.recordsDelivered - before.recordsDelivered, 8);
    CHECK_EQ(after.recordsDropped - before.recordsDropped, 92);
    uint64_t sum = 0;
    CHECK_EQ(read_all(ring, &sum), 8); /* what reached the ring, then the end */
    aclprofExtRingDetach(ring);
}

static void test_bad_arguments(void) {
    int fd = -1;
    aclprofExtRing *ring = NULL;
    const void *recs;
    size_t len;
    CHECK_EQ(aclprofExtRingSubscribe(999999, NULL, 64, &fd), ACL_ERROR_INVALID_MODEL_ID);
    uint32_t m = 0;
    CHECK_EQ(aclprofExtModelLoad("bad", 0, &m), ACL_SUCCESS);
    CHECK_EQ(aclprofExtRingSubscribe(m, NULL, 4, &fd), ACL_ERROR_INVALID_PARAM); /* too small */
    CHECK_EQ(aclprofExtRingSubscribe(m, NULL, 64, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtRingAttach("/proc/self/status", -1, &ring), ACL_ERROR_INVALID_FILE);
    CHECK_EQ(aclprofExtRingAttach(NULL, 12345, &ring), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtRingAcquire(NULL, 1, 0, &recs, &len), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtRingSubscribe(m, NULL, 64, &fd), ACL_SUCCESS);
    CHECK_EQ(aclprofExtRingSubscribe(m, NULL, 64, &fd), ACL_ERROR_PROF_REPEAT_SUBSCRIBE);
    CHECK_EQ(aclprofExtRingAttach(NULL, fd, &ring), ACL_SUCCESS);
    CHECK_EQ(aclprofExtRingRelease(ring, 512), ACL_ERROR_INVALID_PARAM); /* nothing acquired */
    CHECK_EQ(aclprofExtRingAcquire(ring, 8, 0, &recs, &len), ACL_SUCCESS);
    CHECK_EQ(len, 0);
    /* A negative timeout is refused, and a failed call leaves no stale batch behind. */
    recs = &fd;
    len = 99;
    CHECK_EQ(aclprofExtRingAcquire(ring, 8, -1, &recs, &len), ACL_ERROR_INVALID_PARAM);
    CHECK(recs == NULL && len == 0);
    /* Misaligned out-pointers are refused, not written through. */
    {
        uint64_t words[8];
        unsigned char *raw = (unsigned char *)words;
        CHECK_EQ(aclprofExtRingAcquire(ring, 8, 0, (const void **)(void *)(raw + 1), &len),
                 ACL_ERROR_INVALID_PARAM);
        CHECK_EQ(aclprofExtModelLoad("bad2", 0, (uint32_t *)(void *)(raw + 1)),
                 ACL_ERROR_INVALID_PARAM);
        CHECK_EQ(aclprofExtGetStats((aclprofExtStats *)(void *)(raw + 4)),
                 ACL_ERROR_INVALID_PARAM);
    }
    CHECK_EQ(aclprofModelUnSubscribe(m), ACL_SUCCESS);
    CHECK_EQ(aclprofExtRingAcquire(ring, 8, 0, &recs, &len), ACL_ERROR_PROF_NOT_RUN);
    CHECK_EQ(aclprofExtRingDetach(ring), ACL_SUCCESS);
}

/* ACLPROF_ON_FULL=drop, a reader that waits before reading: reported = delivered +
 * dropped exactly, and the reader gets exactly the delivered records. */
static void test_drop_policy_counts_exactly(void) {
    uint32_t m = 0;
    aclprofExtRing *ring = attached_ring("dropper", 256, &m);
    aclprofExtStats before, after;
    aclprofExtGetStats(&before);
    report_ops(m, 20000);
    CHECK_EQ(aclprofModelUnSubscribe(m), ACL_SUCCESS);
    aclprofExtGetStats(&after);
    uint64_t sum = 0;
    long got = read_all(ring, &sum);
    aclprofExtRingDetach(ring);
    long reported = (long)(after.recordsReported - before.recordsReported);
    long delivered = (long)(after.recordsDelivered - before.recordsDelivered);
    long dropped = (long)(after.recordsDropped - before.recordsDropped);
    CHECK_EQ(reported, 20000);
    CHECK_EQ(delivered + dropped, reported);
    CHECK_EQ(got, delivered);
    CHECK(dropped > 0);
    CHECK_EQ(sum, 5 * (uint64_t)got);
}

/* A producer process: subscribes a ring at `path`, reports `n` ops, says so on stdout,
 * then waits to be killed (it never unsubscribes). */
static int producer_main(const char *path, long n) {
    uint32_t m = 0;
    int fd = -1;
    if (aclprofExtModelLoad("doomed", 0, &m) != ACL_SUCCESS) return 20;
    if (aclprofExtRingSubscribe(m, path, 4096, &fd) != ACL_SUCCESS) return 21;
    report_ops(m, (int)n);
    printf("ready\n");
    fflush(stdout);
    for (;;) pause();
}

/* Starts this program with `args`, its stdout on a pipe whose read end goes to `*out`. */
static pid_t spawn_reading_stdout(char **args, int *out) {
    int p[2];
    CHECK_EQ(pipe(p), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    pid_t child = 0;
    CHECK_EQ(posix_spawn(&child, g_self, &fa, NULL, args, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    *out = p[0];
    return child;
}

/* The producer dies (SIGKILL) with records in the ring: the reader gets every published
 * record, then the end of the stream ("the producing process died"), not a hang. */
static void test_reader_outlives_a_killed_producer(void) {
    char path[64];
    snprintf(path, sizeof path, "/dev/shm/aclprof-ctest-%d", (int)getpid());
    unlink(path);
    int out;
    char *args[] = {(char *)g_self, "producer", path, "3000", NULL};
    pid_t child = spawn_reading_stdout(args, &out);
    char line[16] = {0};
    CHECK(read(out, line, sizeof line - 1) > 0); /* "ready": 3000 ops published */
    aclprofExtRing *ring = NULL;
    CHECK_EQ(aclprofExtRingAttach(path, -1, &ring), ACL_SUCCESS);
    kill(child, SIGKILL);
    int status;
    waitpid(child, &status, 0);
    uint64_t sum = 0;
    CHECK_EQ(read_all(ring, &sum), 3000);
    aclprofExtRingDetach(ring);
    close(out);
    unlink(path);
}

/* The reader process dies (SIGKILL) while the producer waits for room: the producer stops
 * waiting for it, counts the rest as dropped, and unsubscribing returns promptly. */
static void test_producer_outlives_a_killed_reader(void) {
    uint32_t m = 0;
    int fd = -1;
    CHECK_EQ(aclprofExtModelLoad("orphaned", 0, &m), ACL_SUCCESS);
    CHECK_EQ(aclprofExtRingSubscribe(m, NULL, 8, &fd), ACL_SUCCESS); /* 8 records per lane */
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)getpid(), fd);
    char *args[] = {(char *)g_self, "reader-then-stop", path, NULL};
    pid_t child;
    CHECK_EQ(posix_spawn(&child, g_self, NULL, NULL, args, environ), 0);
    sleep_ms(300); /* attached, waiting for records */
    aclprofExtStats before, after;
    aclprofExtGetStats(&before);
    report_ops(m, 16); /* the child reads and stops releasing after 8 */
    sleep_ms(200);
    kill(child, SIGKILL);
    int status;
    waitpid(child, &status, 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    report_ops(m, 1000); /* must not wait for the dead reader */
    CHECK_EQ(aclprofModelUnSubscribe(m), ACL_SUCCESS);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECK(took < 2.0);
    aclprofExtGetStats(&after);
    long reported = (long)(after.recordsReported - before.recordsReported);
    long delivered = (long)(after.recordsDelivered - before.recordsDelivered);
    long dropped = (long)(after.recordsDropped - before.recordsDropped);
    CHECK_EQ(reported, 1016);
    CHECK_EQ(delivered + dropped, reported);
    CHECK(dropped >= 1000 - 8);
}

/* A producer that reports until it is killed (two threads, each its own stream). */
static void *report_forever(void *arg) {
    uint32_t m = *(uint32_t *)arg;
    for (uint64_t i = 0;; i++) aclprofExtReportOp(m, "forever/op", "Add", i * 10, i * 10 + 5);
    return NULL;
}

static int producer_forever_main(const char *path) {
    static uint32_t m = 0;
    int fd = -1;
    if (aclprofExtModelLoad("forever", 0, &m) != ACL_SUCCESS) return 20;
    if (aclprofExtRingSubscribe(m, path, 64, &fd) != ACL_SUCCESS) return 21;
    printf("ready\n");
    fflush(stdout);
    pthread_t t;
    pthread_create(&t, NULL, report_forever, &m);
    report_forever(&m);
    return 0;
}

/* A reader that reads and releases until it is killed. */
static int reader_forever_main(const char *path) {
    aclprofExtRing *ring = NULL;
    if (aclprofExtRingAttach(path, -1, &ring) != ACL_SUCCESS) return 10;
    for (;;) {
        const void *recs = NULL;
        size_t len = 0;
        if (aclprofExtRingAcquire(ring, 64, 1000, &recs, &len) == ACL_SUCCESS && len > 0)
            aclprofExtRingRelease(ring, len);
    }
}

/* SIGKILL at random points, many seeds: a producer killed while two threads write into
 * the ring (the reader gets whole, valid, ordered records, then the end of the stream); a
 * reader killed while it reads (the producer never hangs, and reported = delivered +
 * dropped). */
static void test_kills_at_random_points(void) {
    for (unsigned seed = 1; seed <= 12; seed++) {
        srand(seed);
        char path[64];
        snprintf(path, sizeof path, "/dev/shm/aclprof-kill-%d-%u", (int)getpid(), seed);
        unlink(path);
        int out;
        char *pargs[] = {(char *)g_self, "producer-forever", path, NULL};
        pid_t producer = spawn_reading_stdout(pargs, &out);
        char line[16] = {0};
        CHECK(read(out, line, sizeof line - 1) > 0);
        aclprofExtRing *ring = NULL;
        CHECK_EQ(aclprofExtRingAttach(path, -1, &ring), ACL_SUCCESS);
        long got = 0;
        uint32_t streams[8];
        uint64_t last[8];
        int nstreams = 0;
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        long kill_after_ms = 1 + rand() % 40;
        int killed = 0;
        for (;;) {
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (!killed && (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= kill_after_ms) {
                kill(producer, SIGKILL);
                killed = 1;
            }
            const void *recs = NULL;
            size_t len = 0;
            aclError e = aclprofExtRingAcquire(ring, 64, 200, &recs, &len);
            if (e == ACL_ERROR_PROF_NOT_RUN) break;
            CHECK_EQ(e, ACL_SUCCESS);
            if (e != ACL_SUCCESS) break;
            if (len == 0) continue;
            /* whole, valid records; each stream (producer thread) in the order reported */
            aclprofExtOp ops[64];
            uint32_t num = 0;
            CHECK_EQ(aclprofExtDecodeOps(recs, len, ops, 64, &num), ACL_SUCCESS);
            for (uint32_t i = 0; i < num; i++) {
                int k = 0;
                while (k < nstreams && streams[k] != ops[i].streamId) k++;
                if (k == nstreams && nstreams < 8) {
                    streams[nstreams] = ops[i].streamId;
                    last[nstreams++] = 0;
                }
                if (k < 8) {
                    CHECK(ops[i].opIndex > last[k]);
                    last[k] = ops[i].opIndex;
                }
            }
            got += num;
            CHECK_EQ(aclprofExtRingRelease(ring, len), ACL_SUCCESS);
        }
        int status;
        waitpid(producer, &status, 0);
        CHECK(killed && WIFSIGNALED(status));
        CHECK(got > 0);
        aclprofExtRingDetach(ring);
        close(out);
        unlink(path);

        /* the reader dies instead */
        uint32_t m = 0;
        int fd = -1;
        CHECK_EQ(aclprofExtModelLoad("survivor", 0, &m), ACL_SUCCESS);
        CHECK_EQ(aclprofExtRingSubscribe(m, NULL, 64, &fd), ACL_SUCCESS);
        char rpath[64];
        snprintf(rpath, sizeof rpath, "/proc/%d/fd/%d", (int)getpid(), fd);
        char *rargs[] = {(char *)g_self, "reader-forever", rpath, NULL};
        pid_t reader;
        CHECK_EQ(posix_spawn(&reader, g_self, NULL, NULL, rargs, environ), 0);
        sleep_ms(100);
        aclprofExtStats before, after;
        aclprofExtGetStats(&before);
        int reported = 0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        kill_after_ms = 1 + rand() % 40;
        killed = 0;
        while (reported < 20000) {
            CHECK_EQ(aclprofExtReportOp(m, "survivor/op", "Add", (uint64_t)reported, (uint64_t)reported + 1), ACL_SUCCESS);
            reported++;
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (!killed && (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= kill_after_ms) {
                kill(reader, SIGKILL);
                waitpid(reader, &status, 0);
                killed = 1;
            }
        }
        if (!killed) {
            kill(reader, SIGKILL);
            waitpid(reader, &status, 0);
        }
        CHECK_EQ(aclprofModelUnSubscribe(m), ACL_SUCCESS);
        aclprofExtGetStats(&after);
        CHECK_EQ((long)(after.recordsReported - before.recordsReported), reported);
        CHECK_EQ((long)((after.recordsDelivered - before.recordsDelivered) + (after.recordsDropped - before.recordsDropped)), reported);
        CHECK_EQ(aclprofExtModelUnload(m), ACL_SUCCESS);
    }
}

/* The reader that the test above kills: reads one batch and never releases it. */
static int reader_then_stop_main(const char *path) {
    aclprofExtRing *ring = NULL;
    if (aclprofExtRingAttach(path, -1, &ring) != ACL_SUCCESS) return 10;
    const void *recs = NULL;
    size_t len = 0;
    while (len == 0) aclprofExtRingAcquire(ring, 64, 1000, &recs, &len);
    for (;;) pause();
}

int main(int argc, char **argv) {
    g_self = argv[0];
    if (argc == 5 && strcmp(argv[1], "reader") == 0)
        return reader_main(argv[2], atol(argv[3]), atoi(argv[4]));
    if (argc == 4 && strcmp(argv[1], "producer") == 0) return producer_main(argv[2], atol(argv[3]));
    if (argc == 3 && strcmp(argv[1], "reader-then-stop") == 0) return reader_then_stop_main(argv[2]);
    if (argc == 3 && strcmp(argv[1], "producer-forever") == 0) return producer_forever_main(argv[2]);
    if (argc == 3 && strcmp(argv[1], "reader-forever") == 0) return reader_forever_main(argv[2]);
    if (argc < 2) return 2;
    g_model_path = argv[1];
    if (argc > 2 && strcmp(argv[2], "drop") == 0) {
        RUN(test_drop_policy_counts_exactly);
    } else if (argc > 2 && strcmp(argv[2], "live") == 0) {
        /* A reader that reads, with the default unsubscribe timeout (30 s, also how long a
         * full lane waits for it): a loaded machine may pause it, never for that long. */
        RUN(test_second_process_reads_every_op);
        RUN(test_bad_arguments);
    } else {
        /* Readers that stall, detach or die, under a short timeout. */
        RUN(test_detached_reader_does_not_block);
        RUN(test_stalled_reader_unsubscribe_is_bounded);
        RUN(test_reader_outlives_a_killed_producer);
        RUN(test_producer_outlives_a_killed_reader);
        RUN(test_kills_at_random_points);
        RUN(test_bad_arguments);
    }
    DONE();
}
