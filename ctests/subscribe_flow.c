/* CANN's documented C subscription flow, end to end, against aclprof linked as
 * -lmsprofiler: pipe(), aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &fd[1]),
 * aclprofModelSubscribe, a pthread reader that reads N x descSize bytes at a time and calls
 * every accessor, aclprofModelUnSubscribe, the reader sees EOF, pthread_join.
 *
 * Ops come from the model simulator (one thread) and from aclprofExtReportOp on several
 * threads at once; every op must arrive exactly once with the right model id, name, type
 * and times. argv[1] is the simulated model (ctests/data/tiny.json). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"
#include "harness.h"

#define EXECUTIONS 20
#define THREADS 4
#define OPS_PER_THREAD 3000
#define READ_RECORDS 10

typedef struct {
    uint32_t model;
    char name[64];
    char type[32];
    uint64_t start, end, duration;
} Seen;

static Seen *g_seen;
static size_t g_nseen, g_cap;
static int g_read_fd;
static uint32_t g_ext_model;

static void *reader(void *arg) {
    (void)arg;
    size_t desc = 0;
    CHECK_EQ(aclprofGetOpDescSize(&desc), ACL_SUCCESS);
    size_t cap = desc * READ_RECORDS;
    char *buf = malloc(cap);
    for (;;) {
        ssize_t n = read(g_read_fd, buf, cap);
        if (n == 0) break; /* EOF: every subscription on this pipe ended */
        if (n < 0) {
            if (errno == EINTR) continue;
            CHECK(!"read failed");
            break;
        }
        uint32_t num = 0;
        CHECK_EQ(aclprofGetOpNum(buf, (size_t)n, &num), ACL_SUCCESS);
        CHECK_EQ((size_t)num * desc, n);
        /* The batch decoder agrees with the accessors on every record (checked below). */
        aclprofExtOp ops[READ_RECORDS];
        uint32_t decoded = 0;
        CHECK_EQ(aclprofExtDecodeOps(buf, (size_t)n, ops, READ_RECORDS, &decoded), ACL_SUCCESS);
        CHECK_EQ(decoded, num);
        for (uint32_t i = 0; i < num; i++) {
            size_t tlen = 0, nlen = 0;
            CHECK_EQ(aclprofGetOpTypeLen(buf, (size_t)n, i, &tlen), ACL_SUCCESS);
            CHECK_EQ(aclprofGetOpNameLen(buf, (size_t)n, i, &nlen), ACL_SUCCESS);
            if (g_nseen == g_cap || tlen > sizeof g_seen->type || nlen > sizeof g_seen->name) {
                CHECK(!"unexpected record");
                continue;
            }
            Seen *s = &g_seen[g_nseen++];
            CHECK_EQ(aclprofGetOpType(buf, (size_t)n, i, s->type, tlen), ACL_SUCCESS);
            CHECK_EQ(aclprofGetOpName(buf, (size_t)n, i, s->name, nlen), ACL_SUCCESS);
            CHECK_EQ(strlen(s->type) + 1, tlen);
            CHECK_EQ(strlen(s->name) + 1, nlen);
            /* names can be read again (CANN's were one-shot) */
            char again[64];
            CHECK_EQ(aclprofGetOpName(buf, (size_t)n, i, again, sizeof again), ACL_SUCCESS);
            CHECK(strcmp(again, s->name) == 0);
            s->start = aclprofGetOpStart(buf, (size_t)n, i);
            s->end = aclprofGetOpEnd(buf, (size_t)n, i);
            s->duration = aclprofGetOpDuration(buf, (size_t)n, i);
            s->model = (uint32_t)aclprofGetModelId(buf, (size_t)n, i);
            CHECK_EQ(aclprofGetGraphId(buf, (size_t)n, i), s->model);
            CHECK_EQ(aclprofGetOpFlag(buf, (size_t)n, i), ACL_SUBSCRIBE_OP);
            CHECK(aclprofGetOpAttriValue(buf, (size_t)n, i, ACL_SUBSCRIBE_ATTRI_THREADID) == NULL);
            CHECK_EQ(s->duration, s->end - s->start);
            CHECK(strcmp(ops[i].name, s->name) == 0 && strcmp(ops[i].opType, s->type) == 0);
            CHECK_EQ(ops[i].nameLen + 1, nlen);
            CHECK_EQ(ops[i].start, s->start);
            CHECK_EQ(ops[i].end, s->end);
            CHECK_EQ(ops[i].duration, s->duration);
            CHECK_EQ(ops[i].modelId, s->model);
            CHECK_EQ(ops[i].flag, ACL_SUBSCRIBE_OP);
        }
    }
    free(buf);
    return NULL;
}

static void *reporter(void *arg) {
    int t = (int)(intptr_t)arg;
    uint64_t base = aclprofExtNowNs();
    for (int i = 0; i < OPS_PER_THREAD; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d_op%d", t, i);
        uint64_t start = base + (uint64_t)i * 1000;
        CHECK_EQ(aclprofExtReportOp(g_ext_model, name, i % 2 ? "MatMul" : "Add", start, start + 100 + (uint64_t)i),
                 ACL_SUCCESS);
    }
    return NULL;
}

static const struct {
    const char *name, *type;
    uint64_t dur_ns, wait_ns;
} TINY[] = {
    {"trans_TransData_0", "TransData", 3500, 1000}, {"conv1/Conv2D", "Conv2D", 20000, 1000},
    {"conv1/Relu", "Relu", 2250, 0},              {"pool1/MaxPool", "MaxPoolV3", 4000, 1000},
    {"fc/MatMulV2", "MatMulV2", 6000, 5000},
};
#define TINY_OPS (sizeof TINY / sizeof TINY[0])

static const char *model_path;

static void test_documented_flow(void) {
    g_cap = EXECUTIONS * TINY_OPS + THREADS * OPS_PER_THREAD + 16;
    g_seen = calloc(g_cap, sizeof *g_seen);
    uint32_t sim = 0;
    CHECK_EQ(aclprofExtSimModelLoad(model_path, &sim), ACL_SUCCESS);
    CHECK_EQ(aclprofExtModelLoad("threaded", 0, &g_ext_model), ACL_SUCCESS);

    int fd[2];
    CHECK_EQ(pipe(fd), 0);
    g_read_fd = fd[0];
    aclprofSubscribeConfig *config = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &fd[1]);
    CHECK(config != NULL);
    CHECK_EQ(aclprofModelSubscribe(sim, config), ACL_SUCCESS);
    CHECK_EQ(aclprofModelSubscribe(g_ext_model, config), ACL_SUCCESS); /* same pipe, two models */

    pthread_t rd, th[THREADS];
    CHECK_EQ(pthread_create(&rd, NULL, reader, NULL), 0);
    for (int t = 0; t < THREADS; t++) CHECK_EQ(pthread_create(&th[t], NULL, reporter, (void *)(intptr_t)t), 0);
    for (int e = 0; e < EXECUTIONS; e++) CHECK_EQ(aclprofExtSimModelExecute(sim), ACL_SUCCESS);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);

    CHECK_EQ(aclprofModelUnSubscribe(sim), ACL_SUCCESS);
    CHECK_EQ(fd[1] == -1, 0); /* still used by the other model: not closed yet */
    CHECK_EQ(aclprofModelUnSubscribe(g_ext_model), ACL_SUCCESS);
    CHECK_EQ(fd[1], -1); /* closed, so the reader sees EOF */
    pthread_join(rd, NULL);
    close(fd[0]);
    CHECK_EQ(aclprofDestroySubscribeConfig(config), ACL_SUCCESS);

    CHECK_EQ(g_nseen, EXECUTIONS * TINY_OPS + THREADS * OPS_PER_THREAD);
    /* simulator ops: in order, exact durations and waits, one execution after another */
    size_t k = 0, sim_seen = 0;
    uint64_t prev_end = 0;
    for (size_t i = 0; i < g_nseen; i++) {
        Seen *s = &g_seen[i];
        if (s->model != sim) continue;
        size_t op = k++ % TINY_OPS;
        sim_seen++;
        CHECK(strcmp(s->name, TINY[op].name) == 0);
        CHECK(strcmp(s->type, TINY[op].type) == 0);
        CHECK_EQ(s->duration, TINY[op].dur_ns);
        if (op > 0) CHECK_EQ(s->start - prev_end, TINY[op].wait_ns);
        else if (prev_end) CHECK(s->start >= prev_end + TINY[op].wait_ns);
        prev_end = s->end;
    }
    CHECK_EQ(sim_seen, EXECUTIONS * TINY_OPS);
    /* reporter ops: each exactly once, with the reported times */
    static unsigned char got[THREADS][OPS_PER_THREAD];
    for (size_t i = 0; i < g_nseen; i++) {
        Seen *s = &g_seen[i];
        if (s->model == sim) continue;
        int t, op;
        CHECK_EQ(s->model, g_ext_model);
        if (sscanf(s->name, "t%d_op%d", &t, &op) != 2 || t < 0 || t >= THREADS || op < 0 || op >= OPS_PER_THREAD) {
            CHECK(!"unknown op name");
            continue;
        }
        got[t][op]++;
        CHECK(strcmp(s->type, op % 2 ? "MatMul" : "Add") == 0);
        CHECK_EQ(s->duration, 100 + op);
    }
    int once = 0;
    for (int t = 0; t < THREADS; t++)
        for (int op = 0; op < OPS_PER_THREAD; op++) once += got[t][op] == 1;
    CHECK_EQ(once, THREADS * OPS_PER_THREAD);

    aclprofExtStats st;
    CHECK_EQ(aclprofExtGetStats(&st), ACL_SUCCESS);
    CHECK_EQ(st.recordsDropped, 0);
    CHECK_EQ(st.recordsReported, g_nseen);
    CHECK_EQ(st.recordsDelivered, g_nseen);
    CHECK_EQ(st.bytesWritten, g_nseen * 512);
    free(g_seen);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.json\n", argv[0]);
        return 2;
    }
    model_path = argv[1];
    RUN(test_documented_flow);
    DONE();
}
