/* Three reporting threads on one device whose ops leave gaps of 100 ns between busy
 * intervals: the Overlap Analysis Free slices are shorter than what a JSON importer can
 * place (a double holds epoch microseconds to about 0.25 us). Used by tools/check_filemode.py
 * to show that the Perfetto trace keeps every slice.
 * Usage: threads DIR OPS_PER_THREAD */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"

#define THREADS 3
#define CHECK_ACL(x)                                                             \
    do {                                                                         \
        aclError e_ = (x);                                                       \
        if (e_ != ACL_SUCCESS) {                                                 \
            fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #x, (int)e_); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

static uint32_t g_model;
static int g_ops;
static uint64_t g_base;

/* Op i of thread k runs from i*1000 + k*300 to 300 ns later: the three threads together are
 * busy for 900 ns of every 1000. */
static void *run(void *arg) {
    uint64_t k = (uint64_t)(uintptr_t)arg;
    for (int i = 0; i < g_ops; i++) {
        uint64_t s = g_base + (uint64_t)i * 1000 + k * 300;
        CHECK_ACL(aclprofExtReportOp(g_model, "MatMul_k", "MatMul", s, s + 300));
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s DIR OPS_PER_THREAD\n", argv[0]);
        return 2;
    }
    g_ops = atoi(argv[2]);
    CHECK_ACL(aclprofExtModelLoad("threads", 0, &g_model));
    CHECK_ACL(aclprofInit(argv[1], strlen(argv[1])));
    uint32_t devices[1] = {0};
    aclprofConfig *config = aclprofCreateConfig(devices, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME);
    if (!config) return 1;
    CHECK_ACL(aclprofStart(config));
    g_base = aclprofExtNowNs();
    pthread_t t[THREADS];
    for (uintptr_t k = 0; k < THREADS; k++) pthread_create(&t[k], NULL, run, (void *)k);
    for (int k = 0; k < THREADS; k++) pthread_join(t[k], NULL);
    CHECK_ACL(aclprofStop(config));
    CHECK_ACL(aclprofFinalize());
    CHECK_ACL(aclprofDestroyConfig(config));
    CHECK_ACL(aclprofExtModelUnload(g_model));
    return 0;
}
