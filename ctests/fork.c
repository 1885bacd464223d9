/* fork(): children of a process whose threads are reporting into a subscription (and using
 * the emulated runtime: memory, datasets, model descriptions), forked again and again (so
 * some forks land while a library lock is held). A child must never hang: it
 * starts with fresh profiling state of its own, can subscribe anew, and never writes the
 * parent's records. The parent's reader gets exactly the parent's records.
 *   fork            the tests
 *   fork envmode    (under PROFILING_MODE=true) a child that exits must not export or crash
 *   fork traffic N  N forks under op metadata, ring, report, memory and runtime traffic, then
 *                   N under file-mode traffic: each child makes the calls of each kind */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "acl/acl.h"
#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"
#include "harness.h"

static volatile int g_stop;
static uint32_t g_model;
static uint32_t g_simModel;

/* One round of the emulated runtime's calls: each takes one of its tables' locks. */
static int runtime_round(void) {
    void *p = NULL;
    if (aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 1;
    aclmdlDataset *ds = aclmdlCreateDataset();
    aclDataBuffer *b = aclCreateDataBuffer(p, 64);
    if (ds == NULL || b == NULL || aclmdlAddDatasetBuffer(ds, b) != ACL_SUCCESS) return 2;
    aclmdlDesc *desc = aclmdlCreateDesc();
    if (desc == NULL || aclmdlGetDesc(desc, g_simModel) != ACL_SUCCESS) return 3;
    if (aclmdlDestroyDesc(desc) != ACL_SUCCESS || aclDestroyDataBuffer(b) != ACL_SUCCESS ||
        aclmdlDestroyDataset(ds) != ACL_SUCCESS || aclrtFree(p) != ACL_SUCCESS) return 4;
    return 0;
}

static void *runtime_user(void *arg) {
    (void)arg;
    while (!g_stop)
        if (runtime_round() != 0) return (void *)1;
    return NULL;
}

static void *reporter(void *arg) {
    (void)arg;
    long n = 0;
    while (!g_stop) {
        if (aclprofExtReportOp(g_model, "parent/op", "Add", (uint64_t)n * 10, (uint64_t)n * 10 + 5) != ACL_SUCCESS) break;
        n++;
    }
    return (void *)n;
}

static void *drain(void *arg) {
    int fd = *(int *)arg;
    static char buf[65536];
    long records = 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0) records += r / 512;
    return (void *)records;
}

/* What a child does with the state it inherited, then with its own. Exit code: 0 if all
 * held, 3 + the step that failed otherwise. The watchdog (alarm) turns a hang into SIGALRM. */
static int child(void) {
    alarm(10);
    if (runtime_round() != 0) return 11;
    if (aclprofExtReportOp(g_model, "child/op", "Add", 1, 2) != ACL_SUCCESS) return 3;
    if (aclprofExtFlush() != ACL_SUCCESS) return 4;
    /* the subscription was the parent's: the child has none of its own */
    if (aclprofModelUnSubscribe(g_model) != ACL_ERROR_INVALID_MODEL_ID) return 5;
    int q[2];
    if (pipe(q) != 0) return 6;
    static int w;
    w = q[1];
    aclprofSubscribeConfig *c = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &w);
    if (c == NULL || aclprofModelSubscribe(g_model, c) != ACL_SUCCESS) return 7;
    for (int i = 0; i < 10; i++)
        if (aclprofExtReportOp(g_model, "child/op", "Add", (uint64_t)i, (uint64_t)i + 1) != ACL_SUCCESS) return 8;
    if (aclprofModelUnSubscribe(g_model) != ACL_SUCCESS || w != -1) return 9;
    static char buf[8192];
    ssize_t r = read(q[0], buf, sizeof buf);
    uint32_t num = 0;
    if (r != 10 * 512 || aclprofGetOpNum(buf, (size_t)r, &num) != ACL_SUCCESS || num != 10) return 10;
    return 0;
}

/* Forks `forks` children that each run `in_child` and exit with what it returns; each must
 * exit with 0 (a hang ends in its watchdog's SIGALRM). */
static void fork_many(int forks, int (*in_child)(void)) {
    for (int k = 0; k < forks; k++) {
        pid_t pid = fork();
        if (pid == 0) _exit(in_child());
        int status = 0;
        CHECK_EQ(waitpid(pid, &status, 0), pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "child %d: %s %d\n", k, WIFEXITED(status) ? "exit" : "signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            CHECK(!"the child held");
        }
    }
}

/* A one-op simulated model into g_simModel, for the runtime's calls. */
static void load_sim_model(void) {
    char desc[] = "/tmp/aclprof-fork-XXXXXX";
    int dfd = mkstemp(desc);
    CHECK(dfd >= 0);
    const char *json = "{\"name\": \"sim\", \"ops\": [{\"name\": \"a\", \"type\": \"Add\", \"duration_us\": 1}]}";
    CHECK_EQ(write(dfd, json, strlen(json)), (ssize_t)strlen(json));
    close(dfd);
    CHECK_EQ(aclprofExtSimModelLoad(desc, &g_simModel), ACL_SUCCESS);
    unlink(desc);
}

static void test_children_of_a_reporting_process(void) {
    CHECK_EQ(aclprofExtModelLoad("forked", 0, &g_model), ACL_SUCCESS);
    load_sim_model();
    int p[2];
    CHECK_EQ(pipe(p), 0);
    static int w;
    w = p[1];
    aclprofSubscribeConfig *c = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &w);
    CHECK_EQ(aclprofModelSubscribe(g_model, c), ACL_SUCCESS);
    pthread_t rd, rep[2], rt;
    pthread_create(&rd, NULL, drain, &p[0]);
    for (int i = 0; i < 2; i++) pthread_create(&rep[i], NULL, reporter, NULL);
    pthread_create(&rt, NULL, runtime_user, NULL);
    fork_many(30, child);
    g_stop = 1;
    void *rtFailed;
    pthread_join(rt, &rtFailed);
    CHECK(rtFailed == NULL);
    long reported = 0;
    for (int i = 0; i < 2; i++) {
        void *n;
        pthread_join(rep[i], &n);
        reported += (long)n;
    }
    CHECK_EQ(aclprofModelUnSubscribe(g_model), ACL_SUCCESS);
    void *got;
    pthread_join(rd, &got);
    CHECK_EQ((long)got, reported); /* nothing lost, nothing written twice by a child */
    close(p[0]);
    aclprofDestroySubscribeConfig(c);
}

/* Under PROFILING_MODE=true: a child that exits normally neither exports the parent's
 * session nor crashes; the parent exports once at its own exit. */
static void test_child_of_env_mode_process_exits_cleanly(void) {
    CHECK_EQ(aclprofExtModelLoad("envforked", 0, &g_model), ACL_SUCCESS);
    for (int i = 0; i < 100; i++) CHECK_EQ(aclprofExtReportOp(g_model, "op", "Add", (uint64_t)i * 10, (uint64_t)i * 10 + 5), ACL_SUCCESS);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(10);
        aclprofExtReportOp(g_model, "child/op", "Add", 1, 2);
        exit(0); /* runs the atexit handlers */
    }
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Traffic: threads that never pause, each inside the library most of the time. */
static volatile int g_traffic;
static int g_ringFd = -1;

/* A new description each call (the first 200 000 times), as the PyTorch bridge makes one for
 * every new shape; then the same again, so the table never fills. */
static aclError new_meta(unsigned *n, uint32_t *id) {
    char shape[32];
    snprintf(shape, sizeof shape, "%u,%d", (*n)++ % 200000, (int)getpid());
    aclprofExtOpMeta m = {shape, "FLOAT16", "NCHW", shape, "FLOAT16", "NCHW", 100, 200};
    return aclprofExtOpMetaCreate(&m, id);
}

/* Registers an op (one of 5000 names, so the table never fills) and reports it by id. */
static aclError registered_op(unsigned n) {
    char name[48];
    snprintf(name, sizeof name, "registered/%u/%d", n % 5000, (int)getpid());
    uint32_t op = 0;
    aclError e = aclprofExtOpRegister(name, strlen(name), "Add", 3, 0, &op);
    return e != ACL_SUCCESS ? e : aclprofExtReportRegisteredOp(g_model, op, 1, 2);
}

static void *meta_traffic(void *arg) {
    (void)arg;
    unsigned n = 0;
    while (!g_traffic) {
        uint32_t id = 0;
        if (new_meta(&n, &id) != ACL_SUCCESS) return (void *)1;
        aclError e = aclprofExtReportOpMeta(g_model, "meta/op", "Conv2D", 1, 2, id);
        if (e != ACL_SUCCESS) return (void *)2;
        if (registered_op(n) != ACL_SUCCESS) return (void *)3;
    }
    return NULL;
}

static aclError mem_event(uint64_t addr, int64_t size) {
    aclprofExtMemEvent ev;
    memset(&ev, 0, sizeof ev);
    ev.deviceId = 0;
    ev.pool = ACLPROF_EXT_MEM_OPERATOR;
    ev.addr = addr;
    ev.size = size;
    ev.owner = "fork/op";
    return aclprofExtMemReport(&ev);
}

static void *mem_traffic(void *arg) {
    (void)arg;
    while (!g_traffic)
        if (mem_event(0x1000, 4096) != ACL_SUCCESS || mem_event(0x1000, -4096) != ACL_SUCCESS)
            return (void *)1;
    return NULL;
}

/* Attaches to the ring, reads what is there and detaches, again and again: the ring
 * readers' table changes all the time. */
static void *ring_traffic(void *arg) {
    long *records = arg;
    while (!g_traffic) {
        aclprofExtRing *r = NULL;
        if (aclprofExtRingAttach(NULL, g_ringFd, &r) != ACL_SUCCESS) return (void *)1;
        const void *recs = NULL;
        size_t len = 0;
        aclError e = aclprofExtRingAcquire(r, 256, 1, &recs, &len);
        if (e != ACL_SUCCESS) return (void *)2;
        *records += (long)(len / 512);
        if (len > 0 && aclprofExtRingRelease(r, len) != ACL_SUCCESS) return (void *)3;
        if (aclprofExtRingDetach(r) != ACL_SUCCESS) return (void *)4;
    }
    return NULL;
}

static void *start_stop(void *arg) {
    aclprofConfig *cfg = arg;
    while (!g_traffic) {
        if (aclprofStart(cfg) != ACL_SUCCESS) return (void *)1;
        for (int i = 0; i < 50; i++) aclprofExtReportOp(g_model, "file/op", "Add", 1, 2);
        if (aclprofStop(cfg) != ACL_SUCCESS) return (void *)2;
    }
    return NULL;
}

/* A child of a process under traffic: a call of each kind, each needing its locks. */
static int traffic_child(void) {
    alarm(30);
    unsigned n = 300000;
    uint32_t id = 0;
    if (new_meta(&n, &id) != ACL_SUCCESS || id == 0) return 3;
    if (aclprofExtReportOpMeta(g_model, "child/op", "Add", 1, 2, id) != ACL_SUCCESS) return 4;
    if (registered_op(n) != ACL_SUCCESS) return 17;
    if (mem_event(0x2000, 64) != ACL_SUCCESS || mem_event(0x2000, -64) != ACL_SUCCESS) return 5;
    if (runtime_round() != 0) return 6;
    /* a ring of its own: subscribed, attached, read and ended */
    int fd = -1;
    if (aclprofExtRingSubscribe(g_model, NULL, 64, &fd) != ACL_SUCCESS) return 7;
    aclprofExtRing *r = NULL;
    if (aclprofExtRingAttach(NULL, fd, &r) != ACL_SUCCESS) return 8;
    for (int i = 0; i < 5; i++)
        if (aclprofExtReportOp(g_model, "child/op", "Add", 1, 2) != ACL_SUCCESS) return 9;
    const void *recs = NULL;
    size_t len = 0;
    if (aclprofExtRingAcquire(r, 64, 10000, &recs, &len) != ACL_SUCCESS || len != 5 * 512) return 10;
    if (aclprofExtRingRelease(r, len) != ACL_SUCCESS) return 11;
    if (aclprofModelUnSubscribe(g_model) != ACL_SUCCESS || aclprofExtRingDetach(r) != ACL_SUCCESS) return 12;
    /* file mode of its own */
    char dir[4096];
    MAKE_TEMP_DIR(dir);
    if (aclprofInit(dir, strlen(dir)) != ACL_SUCCESS) return 13;
    uint32_t dev = 0;
    aclprofConfig *cfg = aclprofCreateConfig(&dev, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME);
    if (cfg == NULL || aclprofStart(cfg) != ACL_SUCCESS) return 14;
    if (aclprofExtReportOp(g_model, "child/op", "Add", 1, 2) != ACL_SUCCESS) return 15;
    if (aclprofStop(cfg) != ACL_SUCCESS || aclprofFinalize() != ACL_SUCCESS) return 16;
    return 0;
}

static void join_all(pthread_t *t, int n) {
    for (int i = 0; i < n; i++) {
        void *failed;
        pthread_join(t[i], &failed);
        CHECK(failed == NULL);
    }
}

/* N forks while op metadata, rings, reports, memory events and the runtime are in use;
 * then N while file-mode sessions start and stop. No child may hang or fail a call. */
static int g_forks;
static void test_children_under_traffic(void) {
    int forks = g_forks;
    CHECK_EQ(aclprofExtModelLoad("traffic", 0, &g_model), ACL_SUCCESS);
    load_sim_model();
    CHECK_EQ(aclprofExtRingSubscribe(g_model, NULL, 4096, &g_ringFd), ACL_SUCCESS);
    long ringRecords = 0;
    pthread_t t[5];
    pthread_create(&t[0], NULL, meta_traffic, NULL);
    pthread_create(&t[1], NULL, mem_traffic, NULL);
    pthread_create(&t[2], NULL, ring_traffic, &ringRecords);
    pthread_create(&t[3], NULL, runtime_user, NULL);
    pthread_create(&t[4], NULL, reporter, NULL);
    fork_many(forks, traffic_child);
    g_traffic = 1;
    g_stop = 1;
    join_all(t, 3);
    join_all(&t[3], 1);
    void *reported;
    pthread_join(t[4], &reported);
    CHECK(ringRecords > 0);
    CHECK_EQ(aclprofModelUnSubscribe(g_model), ACL_SUCCESS);

    char dir[4096];
    MAKE_TEMP_DIR(dir);
    CHECK_EQ(aclprofInit(dir, strlen(dir)), ACL_SUCCESS);
    uint32_t dev = 0;
    aclprofConfig *cfg = aclprofCreateConfig(&dev, 1, ACL_AICORE_NONE, NULL,
                                             ACL_PROF_TASK_TIME | ACL_PROF_TASK_MEMORY);
    CHECK(cfg != NULL);
    g_traffic = 0;
    g_stop = 0;
    pthread_create(&t[0], NULL, meta_traffic, NULL);
    pthread_create(&t[1], NULL, mem_traffic, NULL);
    pthread_create(&t[2], NULL, start_stop, cfg);
    pthread_create(&t[3], NULL, runtime_user, NULL);
    fork_many(forks, traffic_child);
    g_traffic = 1;
    g_stop = 1;
    join_all(t, 4);
    CHECK_EQ(aclprofFinalize(), ACL_SUCCESS);
    aclprofDestroyConfig(cfg);
}

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "traffic") == 0) {
        g_forks = atoi(argv[2]);
        RUN(test_children_under_traffic);
    } else if (argc > 1 && strcmp(argv[1], "envmode") == 0) {
        RUN(test_child_of_env_mode_process_exits_cleanly);
    } else {
        RUN(test_children_of_a_reporting_process);
    }
    DONE();
}
