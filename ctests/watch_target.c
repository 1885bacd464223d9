/* A program for `aclprof top` to watch. It loads a simulated model, subscribes to it with
 * its own pipe (a reader thread counts the ops), and then, each time the file GO appears
 * (it removes it), runs EXECUTIONS executions and creates the file DONE. It ends when STOP
 * appears, unsubscribes, and fails unless its subscription received every op it ran: a
 * watcher coming and going (or killed) must take nothing from the program's own data.
 * Run it under PROFILING_MODE to have file mode record the same ops. While it waits it
 * calls the runtime every 100 ms, as a server's health check would: a process is asked to
 * be watched with a signal and answers at its next call into the library.
 *   usage: watch_target MODEL.json DIR EXECUTIONS OPS  (OPS: the model's ops; GO, DONE,
 *          STOP are files in DIR)                                                        */
#define _DEFAULT_SOURCE /* usleep */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl/acl_prof.h"
#include "acl/acl_rt.h"
#include "acl/acl_prof_ext.h"
#include "harness.h"

#define RECORD 512

static int g_pipe[2];
static long long g_received;

static void *reader(void *arg) {
    (void)arg;
    static char buf[RECORD * 64];
    size_t have = 0;
    for (;;) {
        ssize_t n = read(g_pipe[0], buf + have, sizeof buf - have);
        if (n <= 0) break;
        have += (size_t)n;
        g_received += (long long)(have / RECORD);
        have %= RECORD;
    }
    return NULL;
}

static int exists(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void touch(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f) fclose(f);
}

static void rm(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    unlink(p);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: watch_target MODEL.json DIR EXECUTIONS OPS\n");
        return 2;
    }
    const char *dir = argv[2];
    int executions = atoi(argv[3]);
    long long ops = atoll(argv[4]);
    uint32_t model = 0;
    CHECK_EQ(aclprofExtSimModelLoad(argv[1], &model), ACL_SUCCESS);
    CHECK_EQ(pipe(g_pipe), 0);
    aclprofSubscribeConfig *cfg = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &g_pipe[1]);
    CHECK_EQ(aclprofModelSubscribe(model, cfg), ACL_SUCCESS);
    pthread_t t;
    pthread_create(&t, NULL, reader, NULL);
    /* 1 MiB of device memory held for the whole run: what a watcher's memory gauges show. */
    void *held = NULL;
    CHECK_EQ(aclrtMalloc(&held, 1 << 20, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    long long ran = 0;
    /* WATCH_TARGET_QUIET: idle in its own code only, so it answers a viewer at its first
       execution's call. */
    const int quiet = getenv("WATCH_TARGET_QUIET") != NULL;
    touch(dir, "READY");
    for (unsigned idle = 0; !exists(dir, "STOP"); idle++) {
        if (!quiet && idle % 50 == 0) {
            aclrtRunMode mode;
            CHECK_EQ(aclrtGetRunMode(&mode), ACL_SUCCESS);
        }
        if (exists(dir, "GO")) {
            rm(dir, "GO");
            for (int i = 0; i < executions; i++) CHECK_EQ(aclprofExtSimModelExecute(model), ACL_SUCCESS);
            ran += executions;
            CHECK_EQ(aclprofExtFlush(), ACL_SUCCESS);
            touch(dir, "DONE");
        }
        usleep(2000);
    }
    CHECK_EQ(aclrtFree(held), ACL_SUCCESS);
    CHECK_EQ(aclprofModelUnSubscribe(model), ACL_SUCCESS);
    pthread_join(t, NULL);
    close(g_pipe[0]);
    aclprofDestroySubscribeConfig(cfg);
    printf("ran %lld executions of %lld ops; the subscription received %lld\n", ran, ops, g_received);
    CHECK_EQ(g_received, ran * ops);
    CHECK_EQ(aclprofExtModelUnload(model), ACL_SUCCESS);
    DONE();
}
