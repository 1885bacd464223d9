/* Memory, runtime calls and host resources in a file-mode session, with a known pattern:
 * the application holds 1 MiB for the whole run and allocates 256 KiB four times, leaking
 * the third; a model whose ops need known workspace and outputs runs twice; a runtime that
 * is not CANN reports one 4 KiB operator allocation. The host sampler's thread runs while
 * the session does and is gone after aclprofStop, with no file of /proc left open.
 *
 * With FREES, the program then allocates and frees 4 KiB that many times more (what
 * msprof-analyze's advisor looks for: time spent in aclrtFree).
 *
 *   usage: memory_app RESULT_DIR MODEL.json [FREES]                                    */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"

#define CHECK(call)                                                                   \
    do {                                                                              \
        aclError e_ = (call);                                                         \
        if (e_ != ACL_SUCCESS) {                                                      \
            fprintf(stderr, "%s failed: %d (%s)\n", #call, e_, aclGetRecentErrMsg()); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#include <unistd.h>

/* How many threads are named `name`, or (fds != 0) how many file descriptors are open on
 * files under `name`. */
static int count_open(const char *name, int fds) {
    DIR *d = opendir(fds ? "/proc/self/fd" : "/proc/self/task");
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.' || (fds && atoi(e->d_name) == dirfd(d))) continue;
        char path[512], text[512] = {0};
        if (fds) {
            snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
            if (readlink(path, text, sizeof text - 1) > 0 && strncmp(text, name, strlen(name)) == 0) n++;
        } else {
            snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
            FILE *f = fopen(path, "r");
            if (f && fgets(text, sizeof text, f) && strncmp(text, name, strlen(name)) == 0) n++;
            if (f) fclose(f);
        }
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s RESULT_DIR MODEL.json [FREES]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    uint32_t model = 0;
    CHECK(aclmdlLoadFromFile(argv[2], &model));

    CHECK(aclprofInit(dir, strlen(dir)));
    uint32_t devices[1] = {0};
    aclprofConfig *config = aclprofCreateConfig(
        devices, 1, ACL_AICORE_NONE, NULL,
        ACL_PROF_ACL_API | ACL_PROF_TASK_TIME | ACL_PROF_TASK_MEMORY | ACL_PROF_RUNTIME_API);
    if (!config) return 1;
    CHECK(aclprofSetConfig(ACL_PROF_SYS_HARDWARE_MEM_FREQ, "50", 2));
    CHECK(aclprofSetConfig(ACL_PROF_HOST_SYS, "cpu,mem,osrt", 12));
    if (count_open("aclprof-host", 0) != 0) return 4;
    CHECK(aclprofStart(config));
    /* The thread names itself once it runs: wait for that (up to a minute). */
    for (int i = 0; count_open("aclprof-host", 0) != 1; i++) {
        if (i == 60000) return 5;
        usleep(1000);
    }

    void *held = NULL;
    CHECK(aclrtMalloc(&held, 1 << 20, ACL_MEM_MALLOC_HUGE_FIRST));
    for (int i = 0; i < 4; i++) {
        void *p = NULL;
        CHECK(aclrtMalloc(&p, 256 << 10, ACL_MEM_MALLOC_HUGE_FIRST));
        if (i != 2) CHECK(aclrtFree(p)); /* the third is leaked */
    }
    for (int i = 0; i < 2; i++) CHECK(aclprofExtSimModelExecute(model));
    aclprofExtMemEvent ev = {0, ACLPROF_EXT_MEM_OPERATOR, 0xabc000, 4096, "custom_op", 0, 0, 0};
    CHECK(aclprofExtMemReport(&ev));
    ev.size = -4096;
    CHECK(aclprofExtMemReport(&ev));
    /* Bad input: the documented error, nothing recorded. */
    ev.size = 0;
    if (aclprofExtMemReport(&ev) != ACL_ERROR_INVALID_PARAM) return 3;
    if (aclprofExtMemReport(NULL) != ACL_ERROR_INVALID_PARAM) return 3;
    CHECK(aclrtFree(held));
    for (long i = 0, n = argc == 4 ? atol(argv[3]) : 0; i < n; i++) {
        void *p = NULL;
        CHECK(aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK(aclrtFree(p));
    }

    CHECK(aclprofStop(config));
    int threads = count_open("aclprof-host", 0), fds = count_open("/proc/", 1);
    if (threads != 0 || fds != 0) {
        fprintf(stderr, "after aclprofStop: %d sampler threads, %d files of /proc open\n", threads, fds);
        return 4;
    }
    CHECK(aclprofDestroyConfig(config));
    CHECK(aclprofFinalize());
    CHECK(aclmdlUnload(model));
    CHECK(aclFinalize());
    return 0;
}
