/* File mode under a file-size limit (RLIMIT_FSIZE, with SIGXFSZ at its default action, which
 * kills a process): nothing kills the host, and ops lost on the way to the disk are counted
 * where the user looks: aclprofExtFlush and aclprofStop return an error, README.txt in the
 * result directory says how many (lost_ops), and a warning is printed without ACLPROF_LOG.
 *   file_faults fsize DIR      the file-size limit
 *   file_faults threads DIR    3000 short-lived threads under RLIMIT_NOFILE 256 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"
#include "harness.h"

#define OPS 10000

static const char *g_dir;

/* The single PROF_* directory's README.txt, read into buf. */
static int read_readme(char *buf, size_t cap) {
    DIR *d = opendir(g_dir);
    if (!d) return 0;
    struct dirent *e;
    char path[1024] = {0};
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "PROF_", 5) == 0)
            snprintf(path, sizeof path, "%s/%s/mindstudio_profiler_output/README.txt", g_dir, e->d_name);
    closedir(d);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
    return 1;
}

static void test_file_size_limit_loss_is_reported(void) {
    uint32_t m = 0;
    CHECK_EQ(aclprofExtModelLoad("limited", 0, &m), ACL_SUCCESS);
    CHECK_EQ(aclprofInit(g_dir, strlen(g_dir)), ACL_SUCCESS);
    uint32_t dev = 0;
    aclprofConfig *cfg = aclprofCreateConfig(&dev, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME);
    CHECK(cfg != NULL);
    CHECK_EQ(aclprofStart(cfg), ACL_SUCCESS);

    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 1 << 20; /* 1 MiB per file: about 2000 of the 10000 raw records */
    CHECK_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
    for (int i = 0; i < OPS; i++)
        CHECK_EQ(aclprofExtReportOp(m, "limited/op", "Add", (uint64_t)i * 1000, (uint64_t)i * 1000 + 500), ACL_SUCCESS);
    CHECK_EQ(aclprofExtFlush(), ACL_ERROR_PROFILING_FAILURE); /* the loss, at the next flush */
    CHECK(strstr(aclGetRecentErrMsg(), "lost") != NULL);
    CHECK_EQ(aclprofExtFlush(), ACL_SUCCESS); /* reported once */
    CHECK_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);

    CHECK_EQ(aclprofStop(cfg), ACL_ERROR_PROFILING_FAILURE); /* exported, but says so */
    CHECK(strstr(aclGetRecentErrMsg(), "lost") != NULL);
    char readme[4096];
    CHECK(read_readme(readme, sizeof readme));
    char *at = strstr(readme, "lost_ops: ");
    CHECK(at != NULL);
    long lost = at ? atol(at + strlen("lost_ops: ")) : 0;
    CHECK(lost > 0 && lost < OPS);
    printf("lost_ops %ld of %d\n", lost, OPS);
    CHECK_EQ(aclprofDestroyConfig(cfg), ACL_SUCCESS);
    CHECK_EQ(aclprofFinalize(), ACL_SUCCESS);
}

static uint32_t g_model;

static void *short_lived(void *arg) {
    (void)arg;
    for (int i = 0; i < 10; i++) {
        uint64_t t = aclprofExtNowNs();
        aclprofExtReportOp(g_model, "short/op", "Add", t, t + 100);
    }
    return NULL;
}

/* 3000 threads, a few alive at a time, 10 ops each, with only 256 file descriptors: threads
 * that have exited hold nothing, and stop exports all 30000 ops. */
static void test_many_short_lived_threads_hold_no_descriptors(void) {
    CHECK_EQ(aclprofExtModelLoad("short-lived", 0, &g_model), ACL_SUCCESS);
    CHECK_EQ(aclprofInit(g_dir, strlen(g_dir)), ACL_SUCCESS);
    uint32_t dev = 0;
    aclprofConfig *cfg = aclprofCreateConfig(&dev, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME);
    CHECK_EQ(aclprofStart(cfg), ACL_SUCCESS);
    struct rlimit old, lim;
    getrlimit(RLIMIT_NOFILE, &old);
    lim = old;
    lim.rlim_cur = 256;
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &lim), 0);
    for (int round = 0; round < 750; round++) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++) CHECK_EQ(pthread_create(&t[i], NULL, short_lived, NULL), 0);
        for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    }
    CHECK_EQ(aclprofStop(cfg), ACL_SUCCESS);
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
    CHECK_EQ(aclprofDestroyConfig(cfg), ACL_SUCCESS);
    CHECK_EQ(aclprofFinalize(), ACL_SUCCESS);
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    g_dir = argv[2];
    if (strcmp(argv[1], "fsize") == 0) RUN(test_file_size_limit_loss_is_reported);
    if (strcmp(argv[1], "threads") == 0) RUN(test_many_short_lived_threads_hold_no_descriptors);
    DONE();
}
