/* An application that never calls the aclprof profiling API: it only runs a model on the
 * emulated runtime. Run with PROFILING_MODE=true and PROFILING_OPTIONS='{"output": ...}',
 * the library profiles it and writes the result directory at exit.
 * With the argument "probe" it also checks that the file-mode control calls answer
 * ACL_ERROR_PROF_ALREADY_RUN, as CANN's do in that mode, and that subscribing works.
 * With "tx" it marks each execution's start and end with aclprofMarkEx (msproftx on).
 *   usage: env_mode_app MODEL.json EXECUTIONS [probe|tx]                              */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"
#include "harness.h"

static const char *g_model;
static int g_executions;
static int g_probe;
static int g_tx;

static void test_runs_a_model(void) {
    uint32_t m = 0;
    CHECK_EQ(aclprofExtSimModelLoad(g_model, &m), ACL_SUCCESS);
    int stream = 1; /* (any non-NULL stream: the emulated device has none of its own) */
    for (int i = 0; i < g_executions; i++) {
        /* msproftx marks around each execution, as a training loop makes them */
        if (g_tx) CHECK_EQ(aclprofMarkEx("iteration_start", 15, &stream), ACL_SUCCESS);
        CHECK_EQ(aclprofExtSimModelExecute(m), ACL_SUCCESS);
        if (g_tx) CHECK_EQ(aclprofMarkEx("iteration_stop", 14, &stream), ACL_SUCCESS);
    }
    if (g_probe) {
        uint32_t dev[] = {0};
        aclprofConfig *c = aclprofCreateConfig(dev, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME);
        CHECK_EQ(aclprofInit("/tmp", 4), ACL_ERROR_PROF_ALREADY_RUN);
        CHECK_EQ(aclprofStart(c), ACL_ERROR_PROF_ALREADY_RUN);
        CHECK_EQ(aclprofStop(c), ACL_ERROR_PROF_ALREADY_RUN);
        CHECK_EQ(aclprofFinalize(), ACL_ERROR_PROF_ALREADY_RUN);
        /* Subscriptions work beside it (docs/compatibility.md): nothing runs while this
         * one is open, so the result directory's ops stay the executions above. */
        int fds[2];
        CHECK(pipe(fds) == 0);
        aclprofSubscribeConfig *s = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &fds[1]);
        CHECK_EQ(aclprofModelSubscribe(m, s), ACL_SUCCESS);
        CHECK_EQ(aclprofInit("/tmp", 4), ACL_ERROR_PROF_ALREADY_RUN);
        CHECK_EQ(aclprofModelUnSubscribe(m), ACL_SUCCESS);
        aclprofDestroySubscribeConfig(s);
        close(fds[0]); /* (the unsubscribe closed the write end, as CANN's does) */
        aclprofDestroyConfig(c);
    }
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    g_model = argv[1];
    g_executions = atoi(argv[2]);
    g_probe = argc > 3 && strcmp(argv[3], "probe") == 0;
    g_tx = argc > 3 && strcmp(argv[3], "tx") == 0;
    RUN(test_runs_a_model);
    DONE(); /* returning from main runs the library's exit handler: the export */
}
