/* Ops registered once (aclprofExtOpRegister) and reported by id
 * (aclprofExtReportRegisteredOp), and reported with their strings' lengths
 * (aclprofExtReportOpLen): a subscriber decodes exactly what aclprofExtReportOp gives it,
 * every record arrives once and in each thread's order, bad ids are refused whether or not
 * anyone listens, and a forked child keeps its parent's ids. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"
#include "harness.h"

#define THREADS 3
#define OPS_PER_THREAD 4000
#define KINDS 4

/* One record as the reader decoded it. */
typedef struct {
    char name[320];
    char type[80];
    size_t nameLen, typeLen;
    uint64_t start, end;
} Seen;

static Seen *g_seen;
static size_t g_nseen, g_cap;
static int g_rfd;
static uint32_t g_model;
static char g_long_name[301], g_long_type[71];
static const char *g_names[KINDS], *g_types[KINDS];
static uint32_t g_ids[KINDS];

static void *reader(void *arg) {
    (void)arg;
    size_t desc = 0;
    CHECK_EQ(aclprofGetOpDescSize(&desc), ACL_SUCCESS);
    char *buf = malloc(desc * 16);
    for (;;) {
        ssize_t n = read(g_rfd, buf, desc * 16);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            CHECK(!"read failed");
            break;
        }
        uint32_t num = 0;
        CHECK_EQ(aclprofGetOpNum(buf, (size_t)n, &num), ACL_SUCCESS);
        for (uint32_t i = 0; i < num && g_nseen < g_cap; i++) {
            Seen *s = &g_seen[g_nseen++];
            CHECK_EQ(aclprofGetOpNameLen(buf, (size_t)n, i, &s->nameLen), ACL_SUCCESS);
            CHECK_EQ(aclprofGetOpTypeLen(buf, (size_t)n, i, &s->typeLen), ACL_SUCCESS);
            CHECK_EQ(aclprofGetOpName(buf, (size_t)n, i, s->name, sizeof s->name), ACL_SUCCESS);
            CHECK_EQ(aclprofGetOpType(buf, (size_t)n, i, s->type, sizeof s->type), ACL_SUCCESS);
            s->start = aclprofGetOpStart(buf, (size_t)n, i);
            s->end = aclprofGetOpEnd(buf, (size_t)n, i);
        }
    }
    free(buf);
    return NULL;
}

/* Thread t reports op i at start (t << 40) + i: by id when i is even, by name when odd,
 * each op of the KINDS in turn. */
static void *reporter(void *arg) {
    uint64_t t = (uint64_t)(intptr_t)arg;
    for (uint64_t i = 0; i < OPS_PER_THREAD; i++) {
        uint64_t start = (t << 40) + i * 10, k = i % KINDS;
        aclError e = i % 2 == 0
            ? aclprofExtReportRegisteredOp(g_model, g_ids[k], start, start + 7)
            : aclprofExtReportOpLen(g_model, g_names[k], strlen(g_names[k]), g_types[k],
                                    strlen(g_types[k]), start, start + 7);
        CHECK_EQ(e, ACL_SUCCESS);
    }
    return NULL;
}

/* A pipe subscription to g_model and its reader thread, collecting up to `cap` records. */
typedef struct {
    int fd[2];
    aclprofSubscribeConfig *config;
    pthread_t reader;
} Listening;

static void listen_for(Listening *l, size_t cap) {
    g_cap = cap;
    g_seen = calloc(g_cap, sizeof *g_seen);
    g_nseen = 0;
    CHECK_EQ(pipe(l->fd), 0);
    g_rfd = l->fd[0];
    l->config = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &l->fd[1]);
    CHECK(l->config != NULL);
    CHECK_EQ(aclprofModelSubscribe(g_model, l->config), ACL_SUCCESS);
    CHECK_EQ(pthread_create(&l->reader, NULL, reader, NULL), 0);
}

/* Unsubscribes and waits for the reader to have read everything (g_seen stays). */
static void stop_listening(Listening *l) {
    CHECK_EQ(aclprofModelUnSubscribe(g_model), ACL_SUCCESS);
    pthread_join(l->reader, NULL);
    close(l->fd[0]);
    aclprofDestroySubscribeConfig(l->config);
}

static void test_registered_ops_decode_as_named_ones(void) {
    memset(g_long_name, 'n', 300);
    memset(g_long_type, 't', 70);
    const char *names[KINDS] = {"resnet50/layer1/conv1/Conv2D", g_long_name, "fc/MatMulV2", ""};
    const char *types[KINDS] = {"Conv2D", "Add", g_long_type, "Relu"};
    aclprofExtOpMeta meta = {"1,64,56,56", "FLOAT16", "NCHW", "1,64,56,56", "FLOAT16", "NCHW",
                             1000, 2000};
    uint32_t metaId = 0;
    CHECK_EQ(aclprofExtOpMetaCreate(&meta, &metaId), ACL_SUCCESS);
    for (int k = 0; k < KINDS; k++) {
        g_names[k] = names[k];
        g_types[k] = types[k];
        CHECK_EQ(aclprofExtOpRegister(names[k], strlen(names[k]), types[k], strlen(types[k]),
                                      k == 0 ? metaId : 0, &g_ids[k]),
                 ACL_SUCCESS);
        CHECK(g_ids[k] != 0);
        uint32_t again = 0;
        CHECK_EQ(aclprofExtOpRegister(names[k], strlen(names[k]), types[k], strlen(types[k]),
                                      k == 0 ? metaId : 0, &again),
                 ACL_SUCCESS);
        CHECK_EQ(again, g_ids[k]); /* the same three, the same id */
    }
    CHECK(g_ids[0] != g_ids[1] && g_ids[1] != g_ids[2] && g_ids[2] != g_ids[3]);

    Listening l;
    listen_for(&l, THREADS * OPS_PER_THREAD + 16);
    pthread_t th[THREADS];
    for (intptr_t t = 0; t < THREADS; t++)
        CHECK_EQ(pthread_create(&th[t], NULL, reporter, (void *)t), 0);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    stop_listening(&l);

    /* Exactly once, in each thread's order; an op by id decodes as the same op by name. */
    CHECK_EQ(g_nseen, THREADS * OPS_PER_THREAD);
    uint64_t next[THREADS] = {0};
    for (size_t j = 0; j < g_nseen; j++) {
        Seen *s = &g_seen[j];
        uint64_t t = s->start >> 40, i = (s->start & ((1ULL << 40) - 1)) / 10;
        if (t >= THREADS) {
            CHECK(!"a record no thread reported");
            continue;
        }
        CHECK_EQ(i, next[t]);
        next[t] = i + 1;
        CHECK_EQ(s->end, s->start + 7);
        /* The record's strings, or (past the process's table of long names, which keeps
         * the latest 4096) their cut forms, as for any op reported by name. */
        int k = (int)(i % KINDS);
        size_t nl = strlen(g_names[k]), tl = strlen(g_types[k]);
        CHECK(strlen(s->name) == nl || (nl > 256 && strlen(s->name) == 256));
        CHECK(strlen(s->type) == tl || (tl > 64 && strlen(s->type) == 64));
        CHECK_EQ(strncmp(s->name, g_names[k], strlen(s->name)), 0);
        CHECK_EQ(strncmp(s->type, g_types[k], strlen(s->type)), 0);
    }
    for (int t = 0; t < THREADS; t++) CHECK_EQ(next[t], OPS_PER_THREAD);
    free(g_seen);
}

/* Every kind by id and by name, once each, on one thread: the two records are equal. */
static void test_each_kind_by_id_equals_by_name(void) {
    Listening l;
    listen_for(&l, 2 * KINDS);
    for (int k = 0; k < KINDS; k++) {
        CHECK_EQ(aclprofExtReportRegisteredOp(g_model, g_ids[k], 100, 200), ACL_SUCCESS);
        CHECK_EQ(aclprofExtReportOp(g_model, g_names[k], g_types[k], 100, 200), ACL_SUCCESS);
    }
    stop_listening(&l);
    CHECK_EQ(g_nseen, 2 * KINDS);
    for (size_t k = 0; k + 1 < g_nseen; k += 2) {
        Seen *a = &g_seen[k], *b = &g_seen[k + 1];
        CHECK(strcmp(a->name, b->name) == 0 && strcmp(a->type, b->type) == 0);
        /* few enough long names that they stay whole in this process */
        CHECK(strcmp(a->name, g_names[k / 2]) == 0 && strcmp(a->type, g_types[k / 2]) == 0);
        CHECK_EQ(a->nameLen, b->nameLen);
        CHECK_EQ(a->typeLen, b->typeLen);
        CHECK_EQ(a->start, b->start);
        CHECK_EQ(a->end, b->end);
    }
    free(g_seen);
}

static void test_bad_ids_and_arguments(void) {
    uint32_t id = 0;
    CHECK_EQ(aclprofExtOpRegister(NULL, 0, "T", 1, 0, &id), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtOpRegister("n", 1, NULL, 0, 0, &id), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtOpRegister("n", 1, "T", 1, 0, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtOpRegister("n", 1, "T", 1, 0xdead, &id), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(id, 0);
    uint32_t bad[] = {0, 1, 2, g_ids[0] + 1000000, g_ids[0] & 0xffffff, g_ids[0] ^ 0x10000000,
                      0xffffffff};
    for (int pass = 0; pass < 2; pass++) { /* nobody listening, then a subscriber */
        Listening l;
        if (pass == 1) listen_for(&l, 4);
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
            CHECK_EQ(aclprofExtReportRegisteredOp(g_model, bad[i], 1, 2), ACL_ERROR_INVALID_PARAM);
        CHECK_EQ(aclprofExtReportRegisteredOp(g_model, g_ids[0], 2, 1), ACL_ERROR_INVALID_PARAM);
        CHECK_EQ(aclprofExtReportOpLen(g_model, NULL, 0, "T", 1, 1, 2), ACL_ERROR_INVALID_PARAM);
        CHECK_EQ(aclprofExtReportOpLen(g_model, "n", 1, "T", 1, 2, 1), ACL_ERROR_INVALID_PARAM);
        /* what was recorded stays: one good op after the refusals */
        CHECK_EQ(aclprofExtReportRegisteredOp(g_model, g_ids[0], 5, 6), ACL_SUCCESS);
        if (pass == 1) {
            CHECK_EQ(aclprofExtReportRegisteredOp(4242, g_ids[0], 1, 2), ACL_ERROR_INVALID_MODEL_ID);
            stop_listening(&l);
            CHECK_EQ(g_nseen, 1);
            CHECK_EQ(g_seen[0].start, 5);
            free(g_seen);
        }
    }
}

/* Lengths are taken as given; a NUL among the bytes ends a string as C would read it. */
static void test_lengths_are_taken_as_given(void) {
    Listening l;
    listen_for(&l, 4);
    CHECK_EQ(aclprofExtReportOpLen(g_model, "conv1/Conv2Dxyz", 12, "Conv2Dabc", 6, 1, 2), ACL_SUCCESS);
    CHECK_EQ(aclprofExtReportOpLen(g_model, "ab\0cd", 5, "T\0U", 3, 3, 4), ACL_SUCCESS);
    uint32_t id = 0;
    CHECK_EQ(aclprofExtOpRegister("pool1/MaxPoolXX", 13, "MaxPoolV3!", 9, 0, &id), ACL_SUCCESS);
    CHECK_EQ(aclprofExtReportRegisteredOp(g_model, id, 5, 6), ACL_SUCCESS);
    stop_listening(&l);
    CHECK_EQ(g_nseen, 3);
    CHECK(strcmp(g_seen[0].name, "conv1/Conv2D") == 0 && strcmp(g_seen[0].type, "Conv2D") == 0);
    CHECK(strcmp(g_seen[1].name, "ab") == 0 && strcmp(g_seen[1].type, "T") == 0);
    CHECK_EQ(g_seen[1].nameLen, 3);
    CHECK(strcmp(g_seen[2].name, "pool1/MaxPool") == 0 && strcmp(g_seen[2].type, "MaxPoolV3") == 0);
    free(g_seen);
}

/* A forked child keeps its parent's ids: it reports them into a subscription of its own,
 * and registering the same op again gives it the same id. */
static void test_a_child_keeps_its_parents_ids(void) {
    pid_t pid = fork();
    if (pid == 0) {
        alarm(10);
        uint32_t again = 0;
        if (aclprofExtReportRegisteredOp(g_model, g_ids[0], 1, 2) != ACL_SUCCESS) _exit(3);
        if (aclprofExtOpRegister(g_names[2], strlen(g_names[2]), g_types[2], strlen(g_types[2]), 0,
                                 &again) != ACL_SUCCESS || again != g_ids[2]) _exit(4);
        int q[2];
        static int w;
        if (pipe(q) != 0) _exit(5);
        w = q[1];
        aclprofSubscribeConfig *c = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &w);
        if (c == NULL || aclprofModelSubscribe(g_model, c) != ACL_SUCCESS) _exit(6);
        if (aclprofExtReportRegisteredOp(g_model, g_ids[0], 10, 20) != ACL_SUCCESS) _exit(7);
        if (aclprofModelUnSubscribe(g_model) != ACL_SUCCESS) _exit(8);
        static char buf[1024], name[64];
        ssize_t r = read(q[0], buf, sizeof buf);
        if (r != 512 || aclprofGetOpName(buf, 512, 0, name, sizeof name) != ACL_SUCCESS) _exit(9);
        _exit(strcmp(name, g_names[0]) == 0 ? 0 : 10);
    }
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
}

int main(void) {
    if (aclprofExtModelLoad("registered", 0, &g_model) != ACL_SUCCESS) return 2;
    RUN(test_registered_ops_decode_as_named_ones);
    RUN(test_each_kind_by_id_equals_by_name);
    RUN(test_bad_ids_and_arguments);
    RUN(test_lengths_are_taken_as_given);
    RUN(test_a_child_keeps_its_parents_ids);
    DONE();
}
