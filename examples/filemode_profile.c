/* File mode from C: aclprofInit / aclprofCreateConfig / aclprofStart / ... / aclprofStop /
 * aclprofFinalize leave a PROF_... result directory that trace viewers and Ascend's
 * analysis tools read. Each model description runs on its own thread (one stream per
 * thread) on the device the description names; steps and msproftx ranges mark the runs.
 *
 *   usage: filemode_profile RESULT_DIR EXECUTIONS MODEL.json [MODEL.json ...]       */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"

#define CHECK_ACL(call)                                                               \
    do {                                                                              \
        aclError e_ = (call);                                                         \
        if (e_ != ACL_SUCCESS) {                                                      \
            fprintf(stderr, "%s failed: %d (%s)\n", #call, e_, aclGetRecentErrMsg()); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#define MAX_MODELS 8

static int g_executions;

static void *run(void *arg) {
    uint32_t model = *(uint32_t *)arg;
    for (int i = 0; i < g_executions; i++) CHECK_ACL(aclprofExtSimModelExecute(model));
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4 || argc - 3 > MAX_MODELS) {
        fprintf(stderr, "usage: %s RESULT_DIR EXECUTIONS MODEL.json [MODEL.json ...]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    g_executions = atoi(argv[2]);
    int nmodels = argc - 3;
    /* The emulated machine needs a device per model description (unless the user says). */
    char count[16];
    snprintf(count, sizeof count, "%d", nmodels);
    setenv("ACLPROF_DEVICE_COUNT", count, 0);

    uint32_t models[MAX_MODELS], devices[MAX_MODELS];
    for (int m = 0; m < nmodels; m++) {
        CHECK_ACL(aclprofExtSimModelLoad(argv[3 + m], &models[m]));
        devices[m] = (uint32_t)m;
    }

    CHECK_ACL(aclprofInit(dir, strlen(dir)));
    aclprofConfig *config =
        aclprofCreateConfig(devices, (uint32_t)nmodels, ACL_AICORE_PIPE_UTILIZATION, NULL,
                            ACL_PROF_ACL_API | ACL_PROF_TASK_TIME | ACL_PROF_AICORE_METRICS | ACL_PROF_TRAINING_TRACE |
                                ACL_PROF_MSPROFTX);
    if (!config) {
        fprintf(stderr, "aclprofCreateConfig: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    CHECK_ACL(aclprofStart(config));

    void *stamp = aclprofCreateStamp();
    CHECK_ACL(aclprofSetStampTraceMessage(stamp, "inference", 9));
    uint32_t range = 0;
    CHECK_ACL(aclprofRangeStart(stamp, &range));
    aclprofStepInfo *step = aclprofCreateStepInfo();
    CHECK_ACL(aclprofGetStepTimestamp(step, ACL_STEP_START, NULL));

    pthread_t threads[MAX_MODELS];
    for (int m = 0; m < nmodels; m++) pthread_create(&threads[m], NULL, run, &models[m]);
    for (int m = 0; m < nmodels; m++) pthread_join(threads[m], NULL);

    CHECK_ACL(aclprofGetStepTimestamp(step, ACL_STEP_END, NULL));
    aclprofDestroyStepInfo(step);
    CHECK_ACL(aclprofRangeStop(range));
    CHECK_ACL(aclprofMark(stamp));
    aclprofDestroyStamp(stamp);

    CHECK_ACL(aclprofStop(config)); /* exports mindstudio_profiler_output/ */
    CHECK_ACL(aclprofFinalize());
    CHECK_ACL(aclprofDestroyConfig(config));
    printf("profiled %d model(s) x %d executions into %s/PROF_*\n", nmodels, g_executions, dir);
    return 0;
}
