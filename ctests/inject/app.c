/* Runs file mode under the fault-injection shim: 4 threads report OPS ops in all and the
 * main thread makes MARKS msproftx marks (host events) and MARKS memory events (the memory
 * log), then aclprofExtFlush and aclprofStop. Prints "flush <code> stop <code>"; the
 * caller checks the result directory (op_summary rows + lost_ops == OPS,
 * lost_host_events).   app DIR */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"

#define OPS 4000
#define MARKS 100
static uint32_t g_model;

static void *reporter(void *arg) {
    (void)arg;
    for (int i = 0; i < OPS / 4; i++) {
        uint64_t t = aclprofExtNowNs();
        aclprofExtReportOp(g_model, "injected/op", "Add", t, t + 100);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (aclprofExtModelLoad("injected", 0, &g_model) != ACL_SUCCESS) return 3;
    if (aclprofInit(argv[1], strlen(argv[1])) != ACL_SUCCESS) return 4;
    uint32_t dev = 0;
    aclprofConfig *cfg =
        aclprofCreateConfig(&dev, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME | ACL_PROF_MSPROFTX | ACL_PROF_TASK_MEMORY);
    if (cfg == NULL || aclprofStart(cfg) != ACL_SUCCESS) return 5;
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, reporter, NULL);
    void *stamp = aclprofCreateStamp();
    aclprofSetStampTraceMessage(stamp, "mark", 4);
    for (int i = 0; i < MARKS; i++) aclprofMark(stamp);
    aclprofDestroyStamp(stamp);
    aclprofExtMemEvent mem = {0};
    mem.pool = ACLPROF_EXT_MEM_OPERATOR;
    mem.owner = "injected/op";
    for (int i = 0; i < MARKS; i++) {
        mem.addr = 0x1000;
        mem.size = i % 2 == 0 ? 4096 : -4096;
        if (aclprofExtMemReport(&mem) != ACL_SUCCESS) return 6;
    }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    int flush = aclprofExtFlush();
    int stop = aclprofStop(cfg);
    printf("flush %d stop %d\n", flush, stop);
    aclprofDestroyConfig(cfg);
    aclprofFinalize();
    return 0;
}
