/* ABI conformance: every CANN acl_prof.h function is assigned to a pointer of the type
 * CANN's header declares (a signature that differs fails to compile, in C and stricter
 * still in C++), and every macro and enum value is checked at compile time. */
#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"
#include "harness.h"

#define STATIC_ASSERT(cond, name) typedef char static_assert_##name[(cond) ? 1 : -1]

/* Prototypes exactly as in CANN's newest include/external/acl/acl_prof.h (plus the
 * exported extras and aclGetRecentErrMsg), then aclprof's extension API. */
#define CANN_FUNCTIONS(X)                                                                                   \
    X(aclError, aclprofInit, (const char *profilerResultPath, size_t length))                               \
    X(aclError, aclprofFinalize, ())                                                                        \
    X(aclError, aclprofStart, (const aclprofConfig *profilerConfig))                                        \
    X(aclprofConfig *, aclprofCreateConfig,                                                                 \
      (uint32_t * deviceIdList, uint32_t deviceNums, aclprofAicoreMetrics aicoreMetrics,                    \
       const aclprofAicoreEvents *aicoreEvents, uint64_t dataTypeConfig))                                   \
    X(aclError, aclprofDestroyConfig, (const aclprofConfig *profilerConfig))                                \
    X(aclError, aclprofStop, (const aclprofConfig *profilerConfig))                                         \
    X(aclError, aclprofSetConfig, (aclprofConfigType configType, const char *config, size_t configLength))  \
    X(aclError, aclprofModelSubscribe, (uint32_t modelId, const aclprofSubscribeConfig *profSubscribeConfig)) \
    X(aclError, aclprofModelUnSubscribe, (uint32_t modelId))                                                \
    X(aclprofSubscribeConfig *, aclprofCreateSubscribeConfig,                                               \
      (int8_t timeInfoSwitch, aclprofAicoreMetrics aicoreMetrics, void *fd))                                \
    X(aclError, aclprofDestroySubscribeConfig, (const aclprofSubscribeConfig *profSubscribeConfig))         \
    X(aclError, aclprofGetOpDescSize, (size_t * opDescSize))                                                \
    X(aclError, aclprofGetOpNum, (const void *opInfo, size_t opInfoLen, uint32_t *opNumber))                \
    X(aclError, aclprofGetOpTypeLen, (const void *opInfo, size_t opInfoLen, uint32_t index, size_t *opTypeLen)) \
    X(aclError, aclprofGetOpType,                                                                           \
      (const void *opInfo, size_t opInfoLen, uint32_t index, char *opType, size_t opTypeLen))               \
    X(aclError, aclprofGetOpNameLen, (const void *opInfo, size_t opInfoLen, uint32_t index, size_t *opNameLen)) \
    X(aclError, aclprofGetOpName,                                                                           \
      (const void *opInfo, size_t opInfoLen, uint32_t index, char *opName, size_t opNameLen))               \
    X(uint64_t, aclprofGetOpStart, (const void *opInfo, size_t opInfoLen, uint32_t index))                  \
    X(uint64_t, aclprofGetOpEnd, (const void *opInfo, size_t opInfoLen, uint32_t index))                    \
    X(uint64_t, aclprofGetOpDuration, (const void *opInfo, size_t opInfoLen, uint32_t index))               \
    X(size_t, aclprofGetModelId, (const void *opInfo, size_t opInfoLen, uint32_t index))                    \
    X(aclprofSubscribeOpFlag, aclprofGetOpFlag, (const void *opInfo, size_t opInfoLen, uint32_t index))     \
    X(const char *, aclprofGetOpAttriValue,                                                                 \
      (const void *opInfo, size_t opInfoLen, uint32_t index, aclprofSubscribeOpAttri attri))                \
    X(aclError, aclprofGetStepTimestamp, (aclprofStepInfo * stepInfo, aclprofStepTag tag, aclrtStream stream)) \
    X(aclprofStepInfo *, aclprofCreateStepInfo, ())                                                         \
    X(void, aclprofDestroyStepInfo, (aclprofStepInfo * stepinfo))                                           \
    X(void *, aclprofCreateStamp, ())                                                                       \
    X(void, aclprofDestroyStamp, (void *stamp))                                                             \
    X(aclError, aclprofPush, (void *stamp))                                                                 \
    X(aclError, aclprofPop, ())                                                                             \
    X(aclError, aclprofRangeStart, (void *stamp, uint32_t *rangeId))                                        \
    X(aclError, aclprofRangeStop, (uint32_t rangeId))                                                       \
    X(aclError, aclprofSetStampTraceMessage, (void *stamp, const char *msg, uint32_t msgLen))               \
    X(aclError, aclprofMark, (void *stamp))                                                                 \
    X(aclError, aclprofMarkEx, (const char *msg, size_t msgLen, aclrtStream stream))                        \
    X(uint64_t, aclprofStr2Id, (const char *message))                                                       \
    X(aclError, aclprofRangePushEx, (aclprofEventAttributes * attr))                                        \
    X(aclError, aclprofRangePop, ())                                                                        \
    X(size_t, aclprofGetGraphId, (const void *opInfo, size_t opInfoLen, uint32_t index))                    \
    X(aclError, aclprofWarmup, (const aclprofConfig *profilerConfig))                                       \
    X(int, aclprofSetStampCategory, (void *stamp, uint32_t category))                                       \
    X(int, aclprofSetStampPayload, (void *stamp, const int32_t type, void *value))                          \
    X(const char *, aclGetRecentErrMsg, ())                                                                 \
    X(aclError, aclprofExtModelLoad, (const char *modelName, uint32_t deviceId, uint32_t *modelId))        \
    X(aclError, aclprofExtModelUnload, (uint32_t modelId))                                                  \
    X(aclError, aclprofExtReportOp,                                                                         \
      (uint32_t modelId, const char *opName, const char *opType, uint64_t startNs, uint64_t endNs))         \
    X(uint64_t, aclprofExtNowNs, ())                                                                        \
    X(aclError, aclprofExtFlush, ())                                                                        \
    X(aclError, aclprofExtGetStats, (aclprofExtStats * stats))                                              \
    X(aclError, aclprofExtSimModelLoad, (const char *path, uint32_t *modelId))                              \
    X(aclError, aclprofExtSimModelExecute, (uint32_t modelId))                                             \
    X(aclError, aclprofExtExport, (const char *profDir))                                                    \
    X(aclError, aclprofExtAnalyze, (const char *path, const char *queryJson, char **result))              \
    X(void, aclprofExtFreeResult, (char *result))                                                           \
    X(aclError, aclprofExtOptionsCheck, (const char *profilingOptions))                                   \
    X(aclError, aclprofExtOptionsStart, (const char *profilingOptions))                                   \
    X(aclError, aclprofExtOptionsStop, (void))                                                            \
    X(aclError, aclprofExtRingSubscribe, (uint32_t modelId, const char *path, uint32_t capacityRecords, int *ringFd)) \
    X(aclError, aclprofExtRingAttach, (const char *path, int fd, aclprofExtRing **ring))                  \
    X(aclError, aclprofExtRingAcquire,                                                                      \
      (aclprofExtRing * ring, uint32_t maxRecords, int32_t timeoutMs, const void **records, size_t *length)) \
    X(aclError, aclprofExtRingRelease, (aclprofExtRing * ring, size_t length))                             \
    X(aclError, aclprofExtRingDetach, (aclprofExtRing * ring))

#define DECLARE(ret, name, args) static ret(*const p_##name) args = name;
CANN_FUNCTIONS(DECLARE)

/* Macros (CANN's are 0x...ULL: 64-bit) */
STATIC_ASSERT(ACL_PROF_ACL_API == 0x0001ULL && sizeof(ACL_PROF_ACL_API) == 8, acl_api);
STATIC_ASSERT(ACL_PROF_TASK_TIME == 0x0002ULL, task_time);
STATIC_ASSERT(ACL_PROF_AICORE_METRICS == 0x0004ULL, aicore_metrics);
STATIC_ASSERT(ACL_PROF_AICPU == 0x0008ULL, aicpu);
STATIC_ASSERT(ACL_PROF_L2CACHE == 0x0010ULL, l2cache);
STATIC_ASSERT(ACL_PROF_HCCL_TRACE == 0x0020ULL, hccl);
STATIC_ASSERT(ACL_PROF_TRAINING_TRACE == 0x0040ULL, training);
STATIC_ASSERT(ACL_PROF_MSPROFTX == 0x0080ULL, msproftx);
STATIC_ASSERT(ACL_PROF_RUNTIME_API == 0x0100ULL, runtime_api);
STATIC_ASSERT(ACL_PROF_GE_API_L0 == 0x0200ULL, ge_l0);
STATIC_ASSERT(ACL_PROF_TASK_TIME_L0 == 0x0800ULL, tt_l0);
STATIC_ASSERT(ACL_PROF_TASK_MEMORY == 0x1000ULL, task_memory);
STATIC_ASSERT(ACL_PROF_GE_API_L1 == 0x01000000ULL, ge_l1);
STATIC_ASSERT(ACL_PROF_TASK_TIME_L2 == 0x2000ULL, tt_l2);
STATIC_ASSERT(ACL_PROF_OP_ATTR == 0x4000ULL, op_attr);
STATIC_ASSERT(ACL_PROF_TASK_TIME_L3 == 0x8000ULL, tt_l3);
STATIC_ASSERT(ACL_PROF_API_STATS == 0x400000000ULL && sizeof(ACL_PROF_API_STATS) == 8, api_stats);
STATIC_ASSERT(ACL_PROF_MAX_OP_NAME_LEN == 257 && ACL_PROF_MAX_OP_TYPE_LEN == 65, max_lens);
/* Enums */
STATIC_ASSERT(ACL_AICORE_ARITHMETIC_UTILIZATION == 0 && ACL_AICORE_PIPE_UTILIZATION == 1 &&
                  ACL_AICORE_MEMORY_BANDWIDTH == 2 && ACL_AICORE_L0B_AND_WIDTH == 3 &&
                  ACL_AICORE_RESOURCE_CONFLICT_RATIO == 4 && ACL_AICORE_MEMORY_UB == 5 &&
                  ACL_AICORE_L2_CACHE == 6 && ACL_AICORE_PIPE_EXECUTE_UTILIZATION == 7 &&
                  ACL_AICORE_MEMORY_ACCESS == 8 && ACL_AICORE_NONE == 0xFF,
              aicore_enum);
STATIC_ASSERT(ACL_STEP_START == 0 && ACL_STEP_END == 1, step_tag);
STATIC_ASSERT(ACL_SUBSCRIBE_OP == 0 && ACL_SUBSCRIBE_SUBGRAPH == 1 && ACL_SUBSCRIBE_OP_THREAD == 2 &&
                  ACL_SUBSCRIBE_NONE == 0xFF,
              op_flag);
STATIC_ASSERT(ACL_SUBSCRIBE_ATTRI_THREADID == 0 && ACL_SUBSCRIBE_ATTRI_NONE == 1, attri);
STATIC_ASSERT(ACL_PROF_ARGS_MIN == 0 && ACL_PROF_STORAGE_LIMIT == 1 && ACL_PROF_SYS_HARDWARE_MEM_FREQ == 3 &&
                  ACL_PROF_LLC_MODE == 4 && ACL_PROF_SYS_IO_FREQ == 5 && ACL_PROF_SYS_INTERCONNECTION_FREQ == 6 &&
                  ACL_PROF_DVPP_FREQ == 7 && ACL_PROF_HOST_SYS == 8 && ACL_PROF_HOST_SYS_USAGE == 9 &&
                  ACL_PROF_HOST_SYS_USAGE_FREQ == 10 && ACL_PROF_LOW_POWER_FREQ == 11 &&
                  ACL_PROF_SYS_MEM_SERVICEFLOW == 12 && ACL_PROF_SYS_CPU_FREQ == 13 && ACL_PROF_OPTYPE == 14 &&
                  ACL_PROF_NTS_METRICS == 15 && ACL_PROF_PATH == 16 && ACL_PROF_ARGS_MAX == 17,
              config_type);
STATIC_ASSERT(sizeof(aclError) == 4 && sizeof(aclprofAicoreMetrics) == 4 && sizeof(aclprofStepTag) == 4 &&
                  sizeof(aclprofSubscribeOpFlag) == 4 && sizeof(aclprofSubscribeOpAttri) == 4 &&
                  sizeof(aclprofConfigType) == 4,
              enum_sizes);
/* aclError values (CANN's acl_base.h) */
STATIC_ASSERT(ACL_SUCCESS == 0 && ACL_ERROR_NONE == 0 && ACL_ERROR_INVALID_PARAM == 100000 &&
                  ACL_ERROR_UNINITIALIZE == 100001 && ACL_ERROR_REPEAT_INITIALIZE == 100002 &&
                  ACL_ERROR_INVALID_FILE == 100003 && ACL_ERROR_INVALID_PROFILING_CONFIG == 100010 &&
                  ACL_ERROR_INVALID_MODEL_ID == 100011 && ACL_ERROR_PROF_ALREADY_RUN == 100042 &&
                  ACL_ERROR_PROF_NOT_RUN == 100043 && ACL_ERROR_PROF_REPEAT_SUBSCRIBE == 148046 &&
                  ACL_ERROR_PROF_API_CONFLICT == 148047 && ACL_ERROR_INVALID_DEVICE == 200002 &&
                  ACL_ERROR_INVALID_RESOURCE_HANDLE == 200005 && ACL_ERROR_FEATURE_UNSUPPORTED == 200006 &&
                  ACL_ERROR_PROF_MODULES_UNSUPPORTED == 200007 && ACL_ERROR_GE_FAILURE == 500002 &&
                  ACL_ERROR_PROFILING_FAILURE == 500005,
              error_codes);
STATIC_ASSERT(sizeof(aclprofExtStats) == 32, ext_stats);

static void test_every_function_is_exported(void) {
    int n = 0;
#define TOUCH(ret, name, args) \
    CHECK(p_##name != NULL);   \
    n++;
    CANN_FUNCTIONS(TOUCH)
    CHECK_EQ(n, 62);
    size_t size = 0;
    CHECK_EQ(p_aclprofGetOpDescSize(&size), ACL_SUCCESS);
    CHECK_EQ(size, 512);
}

int main(void) {
    RUN(test_every_function_is_exported);
    DONE();
}
