/* A host data pipeline feeding a simulated model, reported through the extension API: each
 * step, "read" (worker 0) then "decode" (workers 0 and 1 in turn) spans, samples of both
 * stages' output queues (read's full; decode's depth step % 3 of 8), the training thread's
 * wait, then one execution. Run it under PROFILING_MODE; tools/check_filemode.py checks the
 * timelines it leaves.
 *   usage: pipeline_app MODEL.json STEPS                                                  */
#include <stdlib.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"
#include "harness.h"

static const char *g_model;
static int g_steps;

static void test_reports_a_pipeline(void) {
    uint32_t m = 0;
    CHECK_EQ(aclprofExtSimModelLoad(g_model, &m), ACL_SUCCESS);
    for (int s = 0; s < g_steps; s++) {
        uint64_t t = aclprofExtNowNs();
        CHECK_EQ(aclprofExtPipelineSpan("read", 0, t, t + 100000), ACL_SUCCESS);
        CHECK_EQ(aclprofExtPipelineSpan("decode", (uint32_t)(s % 2), t + 100000, t + 400000), ACL_SUCCESS);
        CHECK_EQ(aclprofExtPipelineQueue("read", 8, 8, t + 100000), ACL_SUCCESS);
        CHECK_EQ(aclprofExtPipelineQueue("decode", (uint32_t)(s % 3), 8, t + 400000), ACL_SUCCESS);
        CHECK_EQ(aclprofExtPipelineSpan("wait", 0, t, t + 400000), ACL_SUCCESS);
        CHECK_EQ(aclprofExtSimModelExecute(m), ACL_SUCCESS);
    }
    /* Bad input: the documented error, nothing recorded. */
    CHECK_EQ(aclprofExtPipelineSpan(NULL, 0, 0, 1), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtPipelineSpan("decode", 0, 2, 1), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtPipelineQueue("decode", 9, 8, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtModelUnload(m), ACL_SUCCESS);
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    g_model = argv[1];
    g_steps = atoi(argv[2]);
    RUN(test_reports_a_pipeline);
    DONE();
}
