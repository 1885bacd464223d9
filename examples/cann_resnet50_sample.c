/*
 * A C program written the way CANN's resnet50 image classification sample is -- init,
 * device, context, stream, load the model, its description, input and output datasets,
 * execute in a loop, read the output, tear down -- with profiling added both ways CANN
 * offers: a subscription (pipe + reader thread) and file mode (a PROF_ result directory).
 * It includes only CANN's headers and links with -lascendcl, so it builds unchanged
 * against CANN or against aclprof:
 *
 *   gcc cann_resnet50_sample.c $(pkg-config --cflags --libs aclprof) -lascendcl -lpthread
 *   ./a.out models/resnet50.om RESULT_DIR [EXECUTIONS]
 *
 * With no NPU, "models/resnet50.om" loads the model description beside it
 * (models/resnet50.json), which the emulated device runs.
 */
#include "acl/acl.h"
#include "acl/acl_prof.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(call)                                                                  \
    do {                                                                             \
        aclError ret_ = (call);                                                      \
        if (ret_ != ACL_SUCCESS) {                                                   \
            fprintf(stderr, "%s failed: %d (%s)\n", #call, ret_, aclGetRecentErrMsg()); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

/* The subscription's reader thread: decodes whole records as they arrive, until EOF. */
static int g_readFd;
static unsigned g_opsRead;

static void *reader(void *arg)
{
    (void)arg;
    size_t descSize = 0;
    CHECK(aclprofGetOpDescSize(&descSize));
    size_t cap = descSize * 64, have = 0;
    char *buf = malloc(cap);
    ssize_t n;
    while ((n = read(g_readFd, buf + have, cap - have)) > 0) {
        have += (size_t)n;
        size_t whole = have - have % descSize;
        uint32_t num = 0;
        CHECK(aclprofGetOpNum(buf, whole, &num));
        for (uint32_t i = 0; i < num; i++) {
            char type[65];
            CHECK(aclprofGetOpType(buf, whole, i, type, sizeof type));
            if (type[0] == '\0') {
                fprintf(stderr, "record %u has no op type\n", i);
                exit(1);
            }
        }
        g_opsRead += num;
        memmove(buf, buf + whole, have - whole);
        have -= whole;
    }
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *modelPath = argc > 1 ? argv[1] : "models/resnet50.om";
    const char *resultDir = argc > 2 ? argv[2] : "prof_output";
    int executions = argc > 3 ? atoi(argv[3]) : 5;
    int32_t deviceId = 0;

    /* Resources, as in the sample. */
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(deviceId));
    aclrtContext context;
    CHECK(aclrtCreateContext(&context, deviceId));
    aclrtStream stream;
    CHECK(aclrtCreateStream(&stream));
    aclrtRunMode runMode;
    CHECK(aclrtGetRunMode(&runMode));

    /* The model, with work and weight memory of our own. */
    size_t workSize = 0, weightSize = 0;
    CHECK(aclmdlQuerySize(modelPath, &workSize, &weightSize));
    void *workPtr = NULL, *weightPtr = NULL;
    CHECK(aclrtMalloc(&workPtr, workSize, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&weightPtr, weightSize, ACL_MEM_MALLOC_HUGE_FIRST));
    uint32_t modelId;
    CHECK(aclmdlLoadFromFileWithMem(modelPath, &modelId, workPtr, workSize, weightPtr, weightSize));
    aclmdlDesc *desc = aclmdlCreateDesc();
    CHECK(aclmdlGetDesc(desc, modelId));

    /* Input: one image, staged in host memory and copied to the device. */
    size_t inputSize = aclmdlGetInputSizeByIndex(desc, 0);
    void *inputDev = NULL, *inputHost = NULL;
    CHECK(aclrtMalloc(&inputDev, inputSize, ACL_MEM_MALLOC_NORMAL_ONLY));
    CHECK(aclrtMallocHost(&inputHost, inputSize));
    memset(inputHost, 0x3c, inputSize);
    CHECK(aclrtMemcpy(inputDev, inputSize, inputHost, inputSize,
                      runMode == ACL_HOST ? ACL_MEMCPY_HOST_TO_DEVICE : ACL_MEMCPY_DEVICE_TO_DEVICE));
    CHECK(aclrtFreeHost(inputHost));
    aclmdlDataset *input = aclmdlCreateDataset();
    aclDataBuffer *inputBuf = aclCreateDataBuffer(inputDev, inputSize);
    CHECK(aclmdlAddDatasetBuffer(input, inputBuf));

    /* Outputs: one device buffer each. */
    aclmdlDataset *output = aclmdlCreateDataset();
    for (size_t i = 0; i < aclmdlGetNumOutputs(desc); ++i) {
        size_t size = aclmdlGetOutputSizeByIndex(desc, i);
        void *dev = NULL;
        CHECK(aclrtMalloc(&dev, size, ACL_MEM_MALLOC_NORMAL_ONLY));
        CHECK(aclmdlAddDatasetBuffer(output, aclCreateDataBuffer(dev, size)));
    }

    /* Profiling by subscription: every op of every execution, read by a thread. */
    int fd[2];
    if (pipe(fd) != 0) {
        perror("pipe");
        return 1;
    }
    g_readFd = fd[0];
    aclprofSubscribeConfig *subConfig = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &fd[1]);
    CHECK(aclprofModelSubscribe(modelId, subConfig));
    pthread_t thread;
    pthread_create(&thread, NULL, reader, NULL);
    for (int i = 0; i < executions; ++i) {
        CHECK(aclmdlExecute(modelId, input, output));
    }
    CHECK(aclprofModelUnSubscribe(modelId));
    pthread_join(thread, NULL);
    close(fd[0]);
    CHECK(aclprofDestroySubscribeConfig(subConfig));
    printf("subscription: %u ops from %d executions\n", g_opsRead, executions);

    /* Profiling to files: the same executions again, into a PROF_ directory. Under msprof
     * (or `aclprof record`), the process is profiled from outside and aclprofInit answers
     * ACL_ERROR_PROF_ALREADY_RUN: the executions then go into that profiler's directory. */
    aclError initRet = aclprofInit(resultDir, strlen(resultDir));
    if (initRet == ACL_ERROR_PROF_ALREADY_RUN) {
        for (int i = 0; i < executions; ++i) {
            CHECK(aclmdlExecuteAsync(modelId, input, output, stream));
            CHECK(aclrtSynchronizeStream(stream));
        }
        printf("file mode: profiled from outside this program; %d executions ran\n", executions);
    } else {
        CHECK(initRet);
        uint32_t devices[1] = {(uint32_t)deviceId};
        aclprofConfig *config = aclprofCreateConfig(devices, 1, ACL_AICORE_NONE, NULL,
                                                    ACL_PROF_ACL_API | ACL_PROF_TASK_TIME);
        if (config == NULL) {
            fprintf(stderr, "aclprofCreateConfig failed: %s\n", aclGetRecentErrMsg());
            return 1;
        }
        CHECK(aclprofStart(config));
        for (int i = 0; i < executions; ++i) {
            CHECK(aclmdlExecuteAsync(modelId, input, output, stream));
            CHECK(aclrtSynchronizeStream(stream));
        }
        CHECK(aclprofStop(config));
        CHECK(aclprofDestroyConfig(config));
        CHECK(aclprofFinalize());
        printf("file mode: %d executions profiled into %s\n", executions, resultDir);
    }

    /* The output, copied back to the host: the top class. */
    aclDataBuffer *scores = aclmdlGetDatasetBuffer(output, 0);
    size_t scoresSize = aclGetDataBufferSizeV2(scores);
    float *host = NULL;
    CHECK(aclrtMallocHost((void **)&host, scoresSize));
    CHECK(aclrtMemcpy(host, scoresSize, aclGetDataBufferAddr(scores), scoresSize,
                      ACL_MEMCPY_DEVICE_TO_HOST));
    size_t best = 0;
    for (size_t i = 1; i < scoresSize / sizeof(float); ++i) {
        if (host[i] > host[best]) {
            best = i;
        }
    }
    printf("top-1 class %zu of %zu (the emulated device computes no scores)\n", best,
           scoresSize / sizeof(float));
    CHECK(aclrtFreeHost(host));

    /* Tear down, in the sample's order. */
    CHECK(aclDestroyDataBuffer(inputBuf));
    CHECK(aclmdlDestroyDataset(input));
    CHECK(aclrtFree(inputDev));
    for (size_t i = 0; i < aclmdlGetDatasetNumBuffers(output); ++i) {
        aclDataBuffer *b = aclmdlGetDatasetBuffer(output, i);
        CHECK(aclrtFree(aclGetDataBufferAddr(b)));
        CHECK(aclDestroyDataBuffer(b));
    }
    CHECK(aclmdlDestroyDataset(output));
    CHECK(aclmdlUnload(modelId));
    CHECK(aclmdlDestroyDesc(desc));
    CHECK(aclrtFree(workPtr));
    CHECK(aclrtFree(weightPtr));
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtDestroyContext(context));
    CHECK(aclrtResetDevice(deviceId));
    CHECK(aclFinalize());
    return 0;
}
