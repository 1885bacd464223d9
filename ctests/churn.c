/* Churn stress: every record reaches each subscription exactly once or is counted as
 * dropped, each reporting thread's records in the order it reported them, while other
 * subscriptions, models and file-mode sessions come and go around it.
 *
 * Every op is named "t<thread>/<seq>" and typed "m<model id>": seq counts the thread's
 * reports to that model (file mode: to any model), every other one made with
 * aclprofExtReportOpLen, so a reader can tell a duplicate, a
 * reordering, a gap and a record that belongs to another subscription.
 *
 *   churn pipe|ring|drop|stall ROUNDS   model B on a pipe for the whole run, model A
 *                                       subscribed and unsubscribed ROUNDS times (a pipe, or
 *                                       a ring for "ring"), 8 threads reporting to A, B, C
 *                                       ("drop" and "stall": every 10th round, A's reader
 *                                       reads only after the unsubscribe, which must drop)
 *   churn load ROUNDS                   as "pipe", and a thread that loads, subscribes,
 *                                       unsubscribes and unloads a model D each round
 *   churn file-serial|file-race ROUNDS DIR   file mode: 6 threads report to two models on
 *                                       one device while one thread starts and stops
 *                                       sessions (or two threads race with their own
 *                                       configs); every result directory's raw records
 *                                       must equal its op_summary rows
 *
 * Each mode sets the ACLPROF_* variables it needs (small buffers, the drop policy, a short
 * unsubscribe timeout) unless the environment already has them. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <poll.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"
#include "harness.h"

#define NT 8
#define FILE_NT 6
#define NSLOTS 4 /* A, B, C, and the churned model D */

static const char *g_mode;
static int g_lossy;                /* drops are allowed: gaps in a stream are not errors */
static atomic_int g_stop;
static atomic_uint g_model[NSLOTS];
static atomic_ullong g_sent[NT][NSLOTS]; /* reports that returned ACL_SUCCESS */
static atomic_ullong g_read_total;  /* records read by every reader together */
static atomic_int g_bad;            /* violations seen by readers (details on stderr) */

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static unsigned rnd(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (*s >> 16) & 0x7fff;
}

/* ---- readers ---- */

typedef struct {
    uint32_t model;
    int contiguous;   /* each thread's records must be one run of consecutive seqs */
    int from_zero;    /* ... starting at 0 */
    int fd;           /* pipe read end, or ring fd */
    int ring;
    aclprofExtRing *handle; /* attached before the subscription can end */
    int wfd;          /* pipe write end: the subscription's fd, set to -1 by unsubscribe */
    int stall;        /* read nothing until `go` */
    atomic_int go;
    int has[NT];
    uint32_t last[NT];
    uint64_t count[NT];
    uint64_t total;
} Reader;

static void violation(Reader *r, const char *what, unsigned t, unsigned seq) {
    if (atomic_fetch_add(&g_bad, 1) < 20)
        fprintf(stderr, "model %u: %s (thread %u, seq %u, last %u)\n", r->model, what, t, seq,
                r->has[t % NT] ? r->last[t % NT] : 0);
}

static void check_records(Reader *r, const void *buf, size_t len) {
    uint32_t n = 0;
    if (aclprofGetOpNum(buf, len, &n) != ACL_SUCCESS || (size_t)n * 512 != len) {
        violation(r, "a torn or unsigned record", 0, 0);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        char name[64], type[32], want[32];
        unsigned t, seq;
        if (aclprofGetOpName(buf, len, i, name, sizeof name) != ACL_SUCCESS ||
            aclprofGetOpType(buf, len, i, type, sizeof type) != ACL_SUCCESS ||
            sscanf(name, "t%u/%u", &t, &seq) != 2 || t >= NT) {
            violation(r, "a record that is not ours", 0, 0);
            continue;
        }
        snprintf(want, sizeof want, "m%u", r->model);
        if (strcmp(type, want) != 0) {
            violation(r, "another model's record", t, seq);
            continue;
        }
        if (r->has[t] && seq <= r->last[t])
            violation(r, "a duplicate or reordered record", t, seq);
        else if (!g_lossy && r->has[t] && seq != r->last[t] + 1)
            violation(r, "a gap in a lossless stream", t, seq);
        else if (!g_lossy && !r->has[t] && r->from_zero && seq != 0)
            violation(r, "a stream that does not start at its first report", t, seq);
        r->has[t] = 1;
        r->last[t] = seq;
        r->count[t]++;
        r->total++;
    }
}

static void *pipe_reader(void *arg) {
    Reader *r = arg;
    char *buf = malloc(64 * 1024);
    size_t have = 0;
    if (!buf) return NULL;
    while (r->stall && !atomic_load(&r->go)) sleep_us(1000);
    for (;;) {
        ssize_t k = read(r->fd, buf + have, 64 * 1024 - have);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        have += (size_t)k;
        size_t whole = have / 512 * 512;
        if (whole) {
            check_records(r, buf, whole);
            memmove(buf, buf + whole, have - whole);
            have -= whole;
        }
    }
    if (have) violation(r, "a partial record at the end of the stream", 0, 0);
    close(r->fd);
    free(buf);
    atomic_fetch_add(&g_read_total, r->total);
    return NULL;
}

static void *ring_reader(void *arg) {
    Reader *r = arg;
    aclprofExtRing *ring = r->handle;
    while (r->stall && !atomic_load(&r->go)) sleep_us(1000);
    for (;;) {
        const void *recs = NULL;
        size_t len = 0;
        aclError e = aclprofExtRingAcquire(ring, 64, 100, &recs, &len);
        if (e == ACL_ERROR_PROF_NOT_RUN) break;
        if (e != ACL_SUCCESS) {
            violation(r, "ring acquire failed", 0, 0);
            break;
        }
        if (len == 0) continue;
        check_records(r, recs, len);
        aclprofExtRingRelease(ring, len);
    }
    aclprofExtRingDetach(ring);
    atomic_fetch_add(&g_read_total, r->total);
    return NULL;
}

/* Subscribes `model` (a pipe, or a ring) and starts its reader. */
static int start_sub(Reader *r, uint32_t model, int ring, int stall, pthread_t *th) {
    memset(r, 0, sizeof *r);
    r->model = model;
    r->ring = ring;
    r->stall = stall;
    if (ring) {
        int32_t fd = -1;
        if (aclprofExtRingSubscribe(model, NULL, 256, &fd) != ACL_SUCCESS) return -1;
        r->fd = fd;
        if (aclprofExtRingAttach(NULL, fd, &r->handle) != ACL_SUCCESS) return -1;
        return pthread_create(th, NULL, ring_reader, r);
    }
    int p[2];
    if (pipe(p) != 0) return -1;
    r->wfd = p[1]; /* lives as long as the subscription, as CANN asks of the fd argument */
    aclprofSubscribeConfig *cfg = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &r->wfd);
    aclError e = aclprofModelSubscribe(model, cfg);
    aclprofDestroySubscribeConfig(cfg);
    if (e != ACL_SUCCESS) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    r->fd = p[0];
    return pthread_create(th, NULL, pipe_reader, r);
}

/* ---- reporters ---- */

static void *reporter(void *arg) {
    unsigned t = (unsigned)(uintptr_t)arg;
    uint32_t seq[NSLOTS] = {0};
    unsigned s = t + 1;
    char name[32], type[32];
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        for (int m = 0; m < NSLOTS; m++) {
            uint32_t id = atomic_load(&g_model[m]);
            if (id == 0) continue;
            snprintf(name, sizeof name, "t%u/%u", t, seq[m]);
            snprintf(type, sizeof type, "m%u", id);
            uint64_t now = aclprofExtNowNs();
            /* every other op with its strings' lengths: the same path to the same lanes */
            aclError e = seq[m] % 2 == 0
                ? aclprofExtReportOp(id, name, type, now, now + 1)
                : aclprofExtReportOpLen(id, name, strlen(name), type, strlen(type), now, now + 1);
            if (e == ACL_SUCCESS) {
                atomic_fetch_add_explicit(&g_sent[t][m], 1, memory_order_relaxed);
                seq[m]++;
            } else if (!(m == 3 && e == ACL_ERROR_INVALID_MODEL_ID)) {
                /* only the churned model may be gone */
                fprintf(stderr, "thread %u: report to model %u: %d\n", t, id, e);
                atomic_fetch_add(&g_bad, 1);
            }
        }
        if (rnd(&s) % 64 == 0) sched_yield();
    }
    return NULL;
}

/* Model D: loaded, subscribed, read, unsubscribed and unloaded, over and over. */
static int g_rounds;
static void *model_churner(void *arg) {
    (void)arg;
    unsigned s = 99;
    for (int i = 0; i < g_rounds && !g_bad; i++) {
        uint32_t d = 0;
        char name[32];
        snprintf(name, sizeof name, "D%d", i);
        CHECK_EQ(aclprofExtModelLoad(name, 0, &d), ACL_SUCCESS);
        Reader r;
        pthread_t th;
        CHECK_EQ(start_sub(&r, d, 0, 0, &th), 0);
        atomic_store(&g_model[3], d);
        sleep_us(rnd(&s) % 2000);
        if (rnd(&s) % 2) {
            CHECK_EQ(aclprofExtModelUnload(d), ACL_SUCCESS); /* unloaded while subscribed */
            CHECK_EQ(aclprofModelUnSubscribe(d), ACL_SUCCESS);
        } else {
            CHECK_EQ(aclprofModelUnSubscribe(d), ACL_SUCCESS);
            CHECK_EQ(aclprofExtModelUnload(d), ACL_SUCCESS);
        }
        atomic_store(&g_model[3], 0);
        pthread_join(th, NULL);
    }
    return NULL;
}

static uint64_t sent_to_a(void) {
    uint64_t n = 0;
    for (unsigned t = 0; t < NT; t++) n += atomic_load(&g_sent[t][0]);
    return n;
}

/* A stalled round: waits until A's pipe takes no more buffers (its write end is not
 * writable) and, after that, more records were reported to A than the pipe's last buffer
 * could still take (7). The reader reads nothing until the unsubscribe returns, so the
 * unsubscribe must time out and drop those records, however fast or slow the machine. */
static void wait_until_records_cannot_fit(Reader *r) {
    for (int ms = 0;; ms++) {
        struct pollfd p = {r->wfd, POLLOUT, 0};
        if (poll(&p, 1, 0) == 0) break;
        if (ms == 120000) {
            CHECK(!"the stalled pipe filled within two minutes");
            return;
        }
        sleep_us(1000);
    }
    uint64_t at_full = sent_to_a();
    for (int ms = 0; sent_to_a() < at_full + 8; ms++) {
        if (ms == 120000) {
            CHECK(!"records were reported to the stalled pipe's model after it filled");
            return;
        }
        sleep_us(1000);
    }
}

static void test_subscriptions(int rounds) {
    int ring = strcmp(g_mode, "ring") == 0;
    /* Lossy modes stall A's reader every 10th round, so that something is dropped. */
    int stall = strcmp(g_mode, "stall") == 0 || strcmp(g_mode, "drop") == 0;
    g_lossy = stall;
    for (int m = 0; m < 3; m++) {
        uint32_t id = 0;
        char name[8];
        snprintf(name, sizeof name, "%c", 'A' + m);
        CHECK_EQ(aclprofExtModelLoad(name, 0, &id), ACL_SUCCESS);
        atomic_store(&g_model[m], id);
    }
    uint32_t a = g_model[0], b = g_model[1];
    Reader rb;
    pthread_t tb, tr[NT], tc;
    CHECK_EQ(start_sub(&rb, b, 0, 0, &tb), 0);
    rb.contiguous = rb.from_zero = 1;
    for (unsigned t = 0; t < NT; t++) pthread_create(&tr[t], NULL, reporter, (void *)(uintptr_t)t);
    int load = strcmp(g_mode, "load") == 0;
    if (load) pthread_create(&tc, NULL, model_churner, NULL);
    unsigned s = 7;
    uint64_t read_a = 0;
    for (int i = 0; i < rounds && !g_bad; i++) {
        Reader ra;
        pthread_t th;
        if (start_sub(&ra, a, ring, stall && i % 10 == 9, &th) != 0) {
            CHECK(!"subscribe A");
            break;
        }
        ra.contiguous = 1;
        if (ra.stall)
            wait_until_records_cannot_fit(&ra);
        else
            sleep_us(rnd(&s) % 3000);
        CHECK_EQ(aclprofModelUnSubscribe(a), ACL_SUCCESS);
        atomic_store(&ra.go, 1);
        pthread_join(th, NULL);
        read_a += ra.total;
    }
    if (load) pthread_join(tc, NULL);
    atomic_store(&g_stop, 1);
    for (unsigned t = 0; t < NT; t++) pthread_join(tr[t], NULL);
    CHECK_EQ(aclprofModelUnSubscribe(b), ACL_SUCCESS);
    pthread_join(tb, NULL);

    aclprofExtStats st;
    CHECK_EQ(aclprofExtGetStats(&st), ACL_SUCCESS);
    CHECK_EQ(st.recordsReported, st.recordsDelivered + st.recordsDropped);
    CHECK_EQ(atomic_load(&g_read_total), st.recordsDelivered);
    if (!g_lossy) {
        CHECK_EQ(st.recordsDropped, 0);
        /* B, subscribed for the whole run: every report of every thread, once. */
        for (unsigned t = 0; t < NT; t++) CHECK_EQ(rb.count[t], atomic_load(&g_sent[t][1]));
    }
    CHECK_EQ(atomic_load(&g_bad), 0);
    printf("%s: %d rounds; B read %llu, A read %llu; reported %llu delivered %llu dropped %llu\n",
           g_mode, rounds, (unsigned long long)rb.total, (unsigned long long)read_a,
           (unsigned long long)st.recordsReported, (unsigned long long)st.recordsDelivered,
           (unsigned long long)st.recordsDropped);
}

/* ---- file mode ---- */

static void *file_reporter(void *arg) {
    unsigned t = (unsigned)(uintptr_t)arg;
    uint32_t seq = 0;
    char name[32], type[32];
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        for (int m = 0; m < 2; m++) {
            uint32_t id = g_model[m];
            snprintf(name, sizeof name, "t%u/%u", t, seq);
            snprintf(type, sizeof type, "m%u", id);
            uint64_t now = aclprofExtNowNs();
            if (aclprofExtReportOp(id, name, type, now, now + 1) == ACL_SUCCESS) seq++;
        }
    }
    return NULL;
}

static void *start_stop(void *arg) {
    unsigned s = (unsigned)(uintptr_t)arg;
    uint32_t dev = 0;
    aclprofConfig *cfg = aclprofCreateConfig(&dev, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME);
    for (int i = 0; i < g_rounds; i++) {
        aclError e = aclprofStart(cfg);
        if (e == ACL_SUCCESS) {
            sleep_us(500 + rnd(&s) % 3000);
            CHECK_EQ(aclprofStop(cfg), ACL_SUCCESS);
        } else {
            CHECK_EQ(e, ACL_ERROR_PROF_ALREADY_RUN); /* the other thread's session runs */
            sleep_us(rnd(&s) % 1000);
        }
    }
    aclprofDestroyConfig(cfg);
    return NULL;
}

/* The next file in `d` (the directory `dir`) whose name starts with `prefix`, opened
 * for reading; NULL when there is none left. */
static FILE *next_file(DIR *d, const char *dir, const char *prefix) {
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
        char f[16384];
        snprintf(f, sizeof f, "%s/%s", dir, e->d_name);
        FILE *fp = fopen(f, "rb");
        if (fp) return fp;
    }
    return NULL;
}

/* Checks one result directory: raw records == op_summary rows, and each thread's records
 * in its stream file run in order without gaps. Returns the raw record count. */
static uint64_t check_result_dir(const char *prof) {
    char path[8192];
    snprintf(path, sizeof path, "%s/device_0/data", prof);
    uint64_t raw = 0;
    Reader r;
    memset(&r, 0, sizeof r);
    DIR *d = opendir(path);
    FILE *fp;
    if (d) {
        while ((fp = next_file(d, path, "aclprof_ops.stream_"))) {
            static char buf[512 * 256];
            size_t k;
            while ((k = fread(buf, 1, sizeof buf, fp)) > 0) {
                for (size_t off = 0; off + 512 <= k; off += 512) {
                    /* models alternate, so check the thread's order by name only */
                    char name[64];
                    unsigned t, seq;
                    raw++;
                    if (aclprofGetOpName(buf + off, 512, 0, name, sizeof name) != ACL_SUCCESS ||
                        sscanf(name, "t%u/%u", &t, &seq) != 2 || t >= NT) {
                        violation(&r, "a raw record that is not ours", 0, 0);
                        continue;
                    }
                    if (r.has[t] && seq != r.last[t] + 1)
                        violation(&r, "a raw stream out of order or with a gap", t, seq);
                    r.has[t] = 1;
                    r.last[t] = seq;
                }
            }
            fclose(fp);
        }
        closedir(d);
    }
    snprintf(path, sizeof path, "%s/mindstudio_profiler_output", prof);
    long rows = -1;
    d = opendir(path);
    if (d) {
        while ((fp = next_file(d, path, "op_summary_"))) {
            int c;
            rows = -1; /* the header */
            while ((c = fgetc(fp)) != EOF) rows += c == '\n';
            fclose(fp);
        }
        closedir(d);
    }
    if (rows < 0 && raw == 0) return 0; /* a session nobody reported into */
    if ((uint64_t)rows != raw) {
        fprintf(stderr, "%s: %llu raw records, %ld op_summary rows\n", prof,
                (unsigned long long)raw, rows);
        atomic_fetch_add(&g_bad, 1);
    }
    return raw;
}

static void test_file_mode(int rounds, const char *dir) {
    CHECK_EQ(aclprofInit(dir, strlen(dir)), ACL_SUCCESS);
    for (int m = 0; m < 2; m++) {
        uint32_t id = 0;
        CHECK_EQ(aclprofExtModelLoad(m ? "F1" : "F0", 0, &id), ACL_SUCCESS);
        g_model[m] = id;
    }
    g_rounds = rounds;
    pthread_t tr[FILE_NT], ts[2];
    for (unsigned t = 0; t < FILE_NT; t++)
        pthread_create(&tr[t], NULL, file_reporter, (void *)(uintptr_t)t);
    int racers = strcmp(g_mode, "file-race") == 0 ? 2 : 1;
    for (int i = 0; i < racers; i++) pthread_create(&ts[i], NULL, start_stop, (void *)(uintptr_t)(i + 5));
    for (int i = 0; i < racers; i++) pthread_join(ts[i], NULL);
    atomic_store(&g_stop, 1);
    for (unsigned t = 0; t < FILE_NT; t++) pthread_join(tr[t], NULL);
    CHECK_EQ(aclprofFinalize(), ACL_SUCCESS);
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int dirs = 0;
    uint64_t raw = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, "PROF_", 5) != 0) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        raw += check_result_dir(p);
        dirs++;
    }
    if (d) closedir(d);
    CHECK(dirs > 0);
    CHECK(raw > 0);
    CHECK_EQ(atomic_load(&g_bad), 0);
    printf("%s: %d result directories, %llu records\n", g_mode, dirs, (unsigned long long)raw);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: churn pipe|ring|drop|stall|load|file-serial|file-race ROUNDS [DIR]\n");
        return 2;
    }
    g_mode = argv[1];
    int rounds = atoi(argv[2]);
    g_rounds = rounds;
    /* Read at the library's first use, which comes after this. Small buffers fill, so
     * full lanes and partial writes happen; lossy modes need a timeout their stalled readers
     * outsleep. */
    int file_mode = strncmp(g_mode, "file", 4) == 0;
    int lossy = strcmp(g_mode, "drop") == 0 || strcmp(g_mode, "stall") == 0;
    if (!file_mode) setenv("ACLPROF_BUFFER_RECORDS", lossy ? "256" : "1024", 0);
    if (strcmp(g_mode, "drop") == 0) setenv("ACLPROF_ON_FULL", "drop", 0);
    if (lossy) setenv("ACLPROF_UNSUBSCRIBE_TIMEOUT_MS", "200", 0);
    if (file_mode) {
        if (argc < 4) return 2;
        test_file_mode(rounds, argv[3]);
        printf("%s %s\n", g_failures ? "FAILED" : "PASSED", g_mode);
    } else {
        test_subscriptions(rounds);
        printf("%s %s\n", g_failures ? "FAILED" : "PASSED", g_mode);
    }
    DONE();
}
