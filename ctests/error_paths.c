/* The error-path table: every bad input gets CANN's answer (docs/compatibility.md), and the
 * state machine's legality table (docs/design.md) holds.
 * Run with ACLPROF_DEVICE_COUNT=2. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"
#include "harness.h"

#define DESC 512

/* Builds a buffer of n real records by subscribing to a model and capturing its pipe. */
static size_t capture(char *buf, size_t cap, int n) {
    uint32_t m = 0;
    CHECK_EQ(aclprofExtModelLoad("capture", 0, &m), ACL_SUCCESS);
    int fd[2];
    CHECK_EQ(pipe(fd), 0);
    aclprofSubscribeConfig *c = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &fd[1]);
    CHECK_EQ(aclprofModelSubscribe(m, c), ACL_SUCCESS);
    for (int i = 0; i < n; i++) CHECK_EQ(aclprofExtReportOp(m, "conv1/Conv2D", "Conv2D", 1000 + i, 2000 + i), ACL_SUCCESS);
    CHECK_EQ(aclprofModelUnSubscribe(m), ACL_SUCCESS);
    size_t got = 0;
    ssize_t r;
    while (got < cap && (r = read(fd[0], buf + got, cap - got)) > 0) got += (size_t)r;
    close(fd[0]);
    aclprofDestroySubscribeConfig(c);
    CHECK_EQ(aclprofExtModelUnload(m), ACL_SUCCESS);
    return got;
}

static void test_accessors(void) {
    static char mem[4 * DESC + 1];
    char *buf = mem + 1; /* misaligned on purpose: records are byte-addressed */
    size_t len = capture(buf, 4 * DESC, 3);
    CHECK_EQ(len, 3 * DESC);
    uint32_t num = 0;
    size_t sz = 0;
    char out[64];

    CHECK_EQ(aclprofGetOpDescSize(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofGetOpNum(NULL, len, &num), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofGetOpNum(buf, len, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofGetOpNum(buf, len - 1, &num), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofGetOpNum(buf, len, &num), ACL_SUCCESS);
    CHECK_EQ(num, 3);
    CHECK_EQ(aclprofGetOpNum(buf, 0, &num), ACL_SUCCESS);
    CHECK_EQ(num, 0);

    /* the batch decoder: bad arguments, verify-only, and the index of a bad record */
    aclprofExtOp ops[4];
    uint32_t cnt = 99;
    CHECK_EQ(aclprofExtDecodeOps(buf, len, ops, 4, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtDecodeOps(buf, len, NULL, 4, &cnt), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtDecodeOps(NULL, len, ops, 4, &cnt), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtDecodeOps(buf, len - 1, ops, 4, &cnt), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtDecodeOps(buf, len, NULL, 0, &cnt), ACL_SUCCESS);
    CHECK_EQ(cnt, 3);
    CHECK_EQ(aclprofExtDecodeOps(buf, len, ops, 2, &cnt), ACL_SUCCESS); /* capacity bounds it */
    CHECK_EQ(cnt, 2);
    CHECK(strcmp(ops[1].name, "conv1/Conv2D") == 0 && ops[1].typeLen == strlen("Conv2D"));
    buf[2 * DESC + 200] ^= 1; /* corrupt record 2 */
    CHECK_EQ(aclprofExtDecodeOps(buf, len, ops, 4, &cnt), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(cnt, 2);
    buf[2 * DESC + 200] ^= 1;

    /* index checks in 64 bits: values that wrap CANN's 32-bit arithmetic are rejected */
    uint32_t bad_index[] = {3, 59652323u, 8388607u, 8388608u, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof bad_index / sizeof bad_index[0]; i++) {
        CHECK_EQ(aclprofGetOpTypeLen(buf, len, bad_index[i], &sz), ACL_ERROR_INVALID_PARAM);
        CHECK_EQ(aclprofGetOpStart(buf, len, bad_index[i]), 0);
        CHECK_EQ(aclprofGetModelId(buf, len, bad_index[i]), ACL_ERROR_INVALID_PARAM);
        CHECK_EQ(aclprofGetOpFlag(buf, len, bad_index[i]), ACL_SUBSCRIBE_NONE);
        CHECK(aclprofGetOpAttriValue(buf, len, bad_index[i], ACL_SUBSCRIBE_ATTRI_THREADID) == NULL);
    }
    /* out-pointers are checked as every out-pointer is, NULL and alignment, on the fast path
       too (record 0 is this thread's last verified record after the first call) */
    static uint64_t words[4];
    size_t *crooked = (size_t *)(void *)((char *)words + 1);
    CHECK_EQ(aclprofGetOpTypeLen(buf, len, 0, &sz), ACL_SUCCESS);
    CHECK_EQ(aclprofGetOpTypeLen(buf, len, 0, crooked), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofGetOpNameLen(buf, len, 0, crooked), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofGetOpDescSize(crooked), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofGetOpNum(buf, len, (uint32_t *)(void *)((char *)words + 1)), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(words[0] | words[1], 0); /* nothing written */
    /* NULLs */
    CHECK_EQ(aclprofGetOpTypeLen(NULL, len, 0, &sz), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofGetOpTypeLen(buf, len, 0, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofGetOpNameLen(buf, len, 0, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofGetOpName(buf, len, 0, NULL, 64), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofGetOpType(buf, len, 0, out, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofGetOpDuration(NULL, len, 0), 0);
    CHECK_EQ(aclprofGetOpFlag(NULL, len, 0), ACL_SUBSCRIBE_NONE);
    CHECK_EQ(aclprofGetModelId(NULL, len, 0), ACL_ERROR_INVALID_PARAM);
    /* wrong length */
    CHECK_EQ(aclprofGetOpEnd(buf, len + 8, 0), 0);
    CHECK_EQ(aclprofGetOpNameLen(buf, DESC - 1, 0, &sz), ACL_ERROR_INVALID_PARAM);
    /* destination too short: an error, nothing written; lengths include the NUL */
    CHECK_EQ(aclprofGetOpNameLen(buf, len, 1, &sz), ACL_SUCCESS);
    CHECK_EQ(sz, strlen("conv1/Conv2D") + 1);
    memset(out, 'x', sizeof out);
    CHECK_EQ(aclprofGetOpName(buf, len, 1, out, sz - 1), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(out[0], 'x');
    CHECK_EQ(aclprofGetOpName(buf, len, 1, out, sz), ACL_SUCCESS);
    CHECK(strcmp(out, "conv1/Conv2D") == 0);
    CHECK_EQ(aclprofGetOpDuration(buf, len, 2), 1000);
    CHECK_EQ(aclprofGetOpStart(buf, len, 2), 1002);
    /* a corrupt record: it and GetOpNum fail, the other records still read (O(1) check) */
    buf[DESC + 300] ^= 0x40;
    CHECK_EQ(aclprofGetOpNum(buf, len, &num), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofGetOpStart(buf, len, 1), 0);
    CHECK_EQ(aclprofGetOpFlag(buf, len, 1), ACL_SUBSCRIBE_NONE);
    CHECK_EQ(aclprofGetOpStart(buf, len, 0), 1000);
    CHECK(strstr(aclGetRecentErrMsg(), "signature") != NULL);
}

static void test_init_and_set_config(void) {
    char path[4096];
    MAKE_TEMP_DIR(path);
    CHECK_EQ(aclprofInit(NULL, 5), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofInit(path, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofInit(path, strlen(path) + 1), ACL_ERROR_INVALID_PARAM); /* NUL inside */
    static char longpath[5000];
    memset(longpath, 'a', sizeof longpath - 1);
    CHECK_EQ(aclprofInit(longpath, sizeof longpath - 1), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofInit("/proc/no/such/dir", strlen("/proc/no/such/dir")), ACL_ERROR_PROFILING_FAILURE);
    CHECK(strstr(aclGetRecentErrMsg(), "/proc/no/such/dir") != NULL);

    CHECK_EQ(aclprofSetConfig((aclprofConfigType)0, "1", 1), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofSetConfig(ACL_PROF_ARGS_MAX, "1", 1), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofSetConfig(ACL_PROF_STORAGE_LIMIT, NULL, 1), ACL_ERROR_INVALID_PARAM);
    static char big[300];
    memset(big, '1', sizeof big - 1);
    CHECK_EQ(aclprofSetConfig(ACL_PROF_STORAGE_LIMIT, big, 257), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofSetConfig(ACL_PROF_STORAGE_LIMIT, "500MB", 6), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofSetConfig(ACL_PROF_STORAGE_LIMIT, "50MB", 4), ACL_SUCCESS); /* checked at start */

    uint32_t dev[] = {0, 1};
    aclprofConfig *cfg = aclprofCreateConfig(dev, 2, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME);
    CHECK(cfg != NULL);
    CHECK_EQ(aclprofInit(path, strlen(path)), ACL_SUCCESS);
    CHECK_EQ(aclprofStart(cfg), ACL_ERROR_PROFILING_FAILURE); /* 50MB is below 200MB */
    CHECK_EQ(aclprofSetConfig(ACL_PROF_STORAGE_LIMIT, "500MB", 5), ACL_SUCCESS);
    CHECK_EQ(aclprofStart(cfg), ACL_SUCCESS);
    CHECK_EQ(aclprofFinalize(), ACL_SUCCESS);
    CHECK_EQ(aclprofDestroyConfig(cfg), ACL_SUCCESS);
    rmdir(path);
}

static void test_configs(void) {
    uint32_t dev[65] = {0};
    uint32_t two[] = {0, 1}, dup[] = {1, 1}, three[] = {2};
    CHECK(aclprofCreateConfig(NULL, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME) == NULL);
    CHECK(aclprofCreateConfig(two, 2, ACL_AICORE_NONE, (const aclprofAicoreEvents *)two, ACL_PROF_TASK_TIME) == NULL);
    CHECK(aclprofCreateConfig(three, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME) == NULL); /* 2 devices */
    CHECK(strstr(aclGetRecentErrMsg(), "device id 2") != NULL);
    CHECK(aclprofCreateConfig(dup, 2, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME) == NULL);
    CHECK(aclprofCreateConfig(dev, 65, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME) == NULL);
    CHECK(aclprofCreateConfig(NULL, 0, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME) == NULL);
    aclprofConfig *host = aclprofCreateConfig(NULL, 0, ACL_AICORE_NONE, NULL, ACL_PROF_MSPROFTX);
    CHECK(host != NULL);
    CHECK_EQ(aclprofDestroyConfig(host), ACL_SUCCESS);
    CHECK_EQ(aclprofDestroyConfig(host), ACL_ERROR_INVALID_PARAM); /* double destroy */
    CHECK_EQ(aclprofDestroyConfig(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofStart(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofStop(NULL), ACL_ERROR_INVALID_PARAM);
    aclprofConfig *zero = aclprofCreateConfig(two, 2, ACL_AICORE_NONE, NULL, 0);
    aclprofConfig *badbits = aclprofCreateConfig(two, 2, ACL_AICORE_NONE, NULL, 0x400);
    CHECK(zero != NULL && badbits != NULL);
    CHECK_EQ(aclprofStart(zero), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofStart(badbits), ACL_ERROR_PROF_MODULES_UNSUPPORTED);
    CHECK_EQ(aclprofStop(badbits), ACL_ERROR_PROF_MODULES_UNSUPPORTED);
    aclprofDestroyConfig(zero);
    aclprofDestroyConfig(badbits);
}

/* the state machine of docs/design.md, call by call */
static void test_legality_table(void) {
    char path[4096];
    MAKE_TEMP_DIR(path);
    uint32_t d0[] = {0};
    aclprofConfig *a = aclprofCreateConfig(d0, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME);
    aclprofConfig *b = aclprofCreateConfig(d0, 1, ACL_AICORE_NONE, NULL, ACL_PROF_ACL_API);
    /* equal content, another object: another config for Start as for Stop */
    aclprofConfig *twin = aclprofCreateConfig(d0, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME);
    uint32_t m = 0;
    CHECK_EQ(aclprofExtModelLoad("legality", 0, &m), ACL_SUCCESS);
    int fd[2];
    CHECK_EQ(pipe(fd), 0);
    aclprofSubscribeConfig *sc = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &fd[1]);

    /* fresh */
    CHECK_EQ(aclprofStart(a), ACL_ERROR_PROF_NOT_RUN);
    CHECK_EQ(aclprofStop(a), ACL_ERROR_PROF_NOT_RUN);
    CHECK_EQ(aclprofFinalize(), ACL_ERROR_PROF_NOT_RUN);
    CHECK_EQ(aclprofModelUnSubscribe(m), ACL_ERROR_INVALID_MODEL_ID);
    /* after init */
    CHECK_EQ(aclprofInit(path, strlen(path)), ACL_SUCCESS);
    CHECK_EQ(aclprofInit(path, strlen(path)), ACL_ERROR_REPEAT_INITIALIZE);
    CHECK_EQ(aclprofModelSubscribe(m, sc), ACL_ERROR_PROF_API_CONFLICT);
    CHECK_EQ(aclprofModelUnSubscribe(m), ACL_ERROR_PROF_API_CONFLICT);
    /* after start */
    CHECK_EQ(aclprofStart(a), ACL_SUCCESS);
    CHECK_EQ(aclprofStart(a), ACL_SUCCESS); /* repeated, same config */
    CHECK_EQ(aclprofStart(b), ACL_ERROR_PROF_ALREADY_RUN);
    CHECK_EQ(aclprofStop(b), ACL_ERROR_INVALID_PROFILING_CONFIG);
    CHECK_EQ(aclprofStart(twin), ACL_ERROR_PROF_ALREADY_RUN);
    CHECK_EQ(aclprofStop(twin), ACL_ERROR_INVALID_PROFILING_CONFIG);
    CHECK_EQ(aclprofModelSubscribe(m, sc), ACL_ERROR_PROF_API_CONFLICT);
    /* after stop */
    CHECK_EQ(aclprofStop(a), ACL_SUCCESS);
    CHECK_EQ(aclprofStop(a), ACL_ERROR_PROF_NOT_RUN);
    CHECK_EQ(aclprofStart(a), ACL_SUCCESS); /* start/stop/start/stop works */
    CHECK_EQ(aclprofStop(a), ACL_SUCCESS);
    CHECK_EQ(aclprofStart(a), ACL_SUCCESS);
    /* finalize stops a running session */
    CHECK_EQ(aclprofFinalize(), ACL_SUCCESS);
    CHECK_EQ(aclprofFinalize(), ACL_ERROR_PROF_NOT_RUN);
    CHECK_EQ(aclprofStart(a), ACL_ERROR_PROF_NOT_RUN);
    /* subscribed */
    CHECK_EQ(aclprofModelSubscribe(99999, sc), ACL_ERROR_INVALID_MODEL_ID);
    CHECK_EQ(aclprofModelSubscribe(m, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofModelSubscribe(m, sc), ACL_SUCCESS);
    CHECK_EQ(aclprofModelSubscribe(m, sc), ACL_ERROR_PROF_REPEAT_SUBSCRIBE);
    CHECK_EQ(aclprofInit(path, strlen(path)), ACL_ERROR_PROF_API_CONFLICT);
    CHECK_EQ(aclprofStart(a), ACL_ERROR_PROF_API_CONFLICT);
    CHECK_EQ(aclprofStop(a), ACL_ERROR_PROF_API_CONFLICT);
    CHECK_EQ(aclprofFinalize(), ACL_ERROR_PROF_API_CONFLICT);
    CHECK_EQ(aclprofModelUnSubscribe(m), ACL_SUCCESS);
    CHECK_EQ(fd[1], -1);
    CHECK_EQ(aclprofModelUnSubscribe(m), ACL_ERROR_INVALID_MODEL_ID);
    close(fd[0]);
    aclprofDestroySubscribeConfig(sc);
    aclprofDestroyConfig(a);
    aclprofDestroyConfig(b);
    aclprofDestroyConfig(twin);
    aclprofExtModelUnload(m);
    rmdir(path);
}

static void test_subscribe_configs(void) {
    int fd[2];
    CHECK_EQ(pipe(fd), 0);
    CHECK(aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, NULL) == NULL);
    CHECK(aclprofCreateSubscribeConfig(2, ACL_AICORE_NONE, &fd[1]) == NULL);
    CHECK_EQ(aclprofDestroySubscribeConfig(NULL), ACL_ERROR_INVALID_PARAM);
    uint32_t m = 0, m1 = 0;
    CHECK_EQ(aclprofExtModelLoad("sub", 0, &m), ACL_SUCCESS);
    CHECK_EQ(aclprofExtModelLoad("sub-dev1", 1, &m1), ACL_SUCCESS);
    aclprofSubscribeConfig *nothing = aclprofCreateSubscribeConfig(0, ACL_AICORE_NONE, &fd[1]);
    CHECK_EQ(aclprofModelSubscribe(m, nothing), ACL_ERROR_INVALID_PARAM);
    int not_open = 1000;
    aclprofSubscribeConfig *closed = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &not_open);
    CHECK_EQ(aclprofModelSubscribe(m, closed), ACL_ERROR_INVALID_PARAM);
    CHECK(strstr(aclGetRecentErrMsg(), "not an open file descriptor") != NULL);
    aclprofSubscribeConfig *read_end = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &fd[0]);
    CHECK_EQ(aclprofModelSubscribe(m, read_end), ACL_ERROR_INVALID_PARAM);
    CHECK(strstr(aclGetRecentErrMsg(), "read end") != NULL);
    /* two models on one device need the same switches */
    aclprofSubscribeConfig *ok = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &fd[1]);
    aclprofSubscribeConfig *metrics = aclprofCreateSubscribeConfig(1, ACL_AICORE_PIPE_UTILIZATION, &fd[1]);
    uint32_t m2 = 0;
    CHECK_EQ(aclprofExtModelLoad("sub2", 0, &m2), ACL_SUCCESS);
    CHECK_EQ(aclprofModelSubscribe(m, ok), ACL_SUCCESS);
    CHECK_EQ(aclprofModelSubscribe(m2, metrics), ACL_ERROR_INVALID_PROFILING_CONFIG);
    CHECK_EQ(aclprofModelSubscribe(m1, metrics), ACL_SUCCESS); /* another device: fine */
    CHECK_EQ(aclprofExtReportOp(m, NULL, "T", 1, 2), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtReportOp(m, "n", NULL, 1, 2), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtReportOp(m, "n", "T", 5, 4), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtReportOp(424242, "n", "T", 1, 2), ACL_ERROR_INVALID_MODEL_ID);
    CHECK_EQ(aclprofModelUnSubscribe(m), ACL_SUCCESS);
    CHECK_EQ(aclprofModelUnSubscribe(m1), ACL_SUCCESS);
    CHECK_EQ(fd[1], -1);
    close(fd[0]);
    aclprofDestroySubscribeConfig(nothing);
    aclprofDestroySubscribeConfig(closed);
    aclprofDestroySubscribeConfig(read_end);
    aclprofDestroySubscribeConfig(ok);
    CHECK_EQ(aclprofDestroySubscribeConfig(ok), ACL_ERROR_INVALID_PARAM);
    aclprofDestroySubscribeConfig(metrics);
}

static void test_extension_errors(void) {
    uint32_t m = 0;
    aclprofExtStats st;
    CHECK_EQ(aclprofExtModelLoad(NULL, 0, &m), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtModelLoad("x", 0, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtModelLoad("x", 2, &m), ACL_ERROR_INVALID_DEVICE);
    CHECK_EQ(aclprofExtModelUnload(777777), ACL_ERROR_INVALID_MODEL_ID);
    CHECK_EQ(aclprofExtSimModelLoad("/no/such/model.json", &m), ACL_ERROR_INVALID_FILE);
    CHECK_EQ(aclprofExtSimModelLoad(NULL, &m), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtSimModelExecute(777777), ACL_ERROR_INVALID_MODEL_ID);
    CHECK_EQ(aclprofExtGetStats(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofExtGetStats(&st), ACL_SUCCESS);
    CHECK_EQ(aclprofExtFlush(), ACL_SUCCESS);
    CHECK(aclprofExtNowNs() > 0);
}

static void test_steps_and_msproftx(void) {
    CHECK_EQ(aclprofGetStepTimestamp(NULL, ACL_STEP_START, NULL), ACL_ERROR_INVALID_PARAM);
    aclprofDestroyStepInfo(NULL);
    aclprofStepInfo *s = aclprofCreateStepInfo();
    CHECK(s != NULL);
    CHECK_EQ(aclprofGetStepTimestamp(s, ACL_STEP_START, NULL), ACL_SUCCESS);
    CHECK_EQ(aclprofGetStepTimestamp(s, ACL_STEP_START, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(aclprofGetStepTimestamp(s, ACL_STEP_END, NULL), ACL_SUCCESS);
    aclprofDestroyStepInfo(s);
    aclprofDestroyStepInfo(s); /* double destroy: ignored, logged */
    /* msproftx is off until a start with ACL_PROF_MSPROFTX */
    CHECK(aclprofCreateStamp() == NULL);
    CHECK_EQ(aclprofPop(), -1);
    CHECK_EQ(aclprofMarkEx("m", 1, (aclrtStream)&s), -1);
    char path[4096];
    MAKE_TEMP_DIR(path);
    aclprofConfig *tx = aclprofCreateConfig(NULL, 0, ACL_AICORE_NONE, NULL, ACL_PROF_MSPROFTX);
    CHECK_EQ(aclprofInit(path, strlen(path)), ACL_SUCCESS);
    CHECK_EQ(aclprofStart(tx), ACL_SUCCESS);
    void *stamp = aclprofCreateStamp();
    CHECK(stamp != NULL);
    CHECK_EQ(aclprofSetStampTraceMessage(stamp, "hello", 5), ACL_SUCCESS);
    CHECK_EQ(aclprofSetStampTraceMessage(NULL, "hello", 5), -1);
    CHECK_EQ(aclprofMark(stamp), ACL_SUCCESS);
    CHECK_EQ(aclprofMark((char *)stamp + 8), -1); /* not a stamp */
    CHECK_EQ(aclprofMarkEx("m", 1, NULL), -1);
    CHECK_EQ(aclprofMarkEx("m", 1, (aclrtStream)&s), ACL_SUCCESS);
    CHECK_EQ(aclprofPush(stamp), ACL_SUCCESS);
    CHECK_EQ(aclprofPop(), ACL_SUCCESS);
    CHECK_EQ(aclprofPop(), -1);
    uint32_t r = 0;
    CHECK_EQ(aclprofRangeStart(stamp, NULL), -1);
    CHECK_EQ(aclprofRangeStart(stamp, &r), ACL_SUCCESS);
    CHECK_EQ(aclprofRangeStop(r), ACL_SUCCESS);
    CHECK_EQ(aclprofRangeStop(r), -1);
    aclprofDestroyStamp(stamp);
    aclprofDestroyStamp(stamp); /* ignored */
    CHECK_EQ(aclprofMark(stamp), -1);
    CHECK_EQ(aclprofStop(tx), ACL_SUCCESS);
    CHECK_EQ(aclprofFinalize(), ACL_SUCCESS);
    CHECK(aclprofCreateStamp() == NULL);
    aclprofDestroyConfig(tx);
    rmdir(path);
}

int main(void) {
    RUN(test_accessors);
    RUN(test_init_and_set_config);
    RUN(test_configs);
    RUN(test_legality_table);
    RUN(test_subscribe_configs);
    RUN(test_extension_errors);
    RUN(test_steps_and_msproftx);
    DONE();
}
