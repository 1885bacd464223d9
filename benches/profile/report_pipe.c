/* Profile target: one thread reports N bursts (argv[1], default 100) of 1024 ops into a pipe
 * subscription whose reader thread keeps up, flushing between bursts, as P4 does. argv[2] is
 * how: "name" (aclprofExtReportOp, the default), "registered" (aclprofExtReportRegisteredOp)
 * or "len" (aclprofExtReportOpLen).
 * scripts/instructions counts the instructions inside burst() alone (callgrind's
 * --toggle-collect): the reporting thread's path, the writes it makes itself included. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"

static int rfd;

static void *reader(void *arg) {
    static char buf[65536];
    long n = 0;
    ssize_t r;
    while ((r = read(rfd, buf, sizeof buf)) > 0) n += r;
    *(long *)arg = n / 512;
    return NULL;
}

#define NAME "resnet50/layer3/block4/conv2/Conv2D"
#define TYPE "Conv2D"
static int how; /* 0 by name, 1 registered, 2 with lengths */
static uint32_t op;

__attribute__((noinline)) void burst(uint32_t m, uint64_t b) {
    for (uint64_t i = 0; i < 1024; i++) {
        uint64_t t = (b * 1024 + i) * 1000;
        if (how == 1)
            aclprofExtReportRegisteredOp(m, op, t, t + 700);
        else if (how == 2)
            aclprofExtReportOpLen(m, NAME, sizeof NAME - 1, TYPE, sizeof TYPE - 1, t, t + 700);
        else
            aclprofExtReportOp(m, NAME, TYPE, t, t + 700);
    }
}

int main(int argc, char **argv) {
    int bursts = argc > 1 ? atoi(argv[1]) : 100;
    if (argc > 2) how = strcmp(argv[2], "registered") == 0 ? 1 : strcmp(argv[2], "len") == 0 ? 2 : 0;
    if (aclprofExtOpRegister(NAME, strlen(NAME), TYPE, strlen(TYPE), 0, &op)) return 1;
    uint32_t m = 0;
    int fds[2];
    static int w;
    if (aclprofExtModelLoad("profile", 0, &m) || pipe(fds)) return 1;
    rfd = fds[0];
    w = fds[1];
    aclprofSubscribeConfig *c = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &w);
    if (aclprofModelSubscribe(m, c)) return 1;
    long got = 0;
    pthread_t t;
    pthread_create(&t, NULL, reader, &got);
    for (int b = 0; b < bursts; b++) {
        burst(m, (uint64_t)b);
        aclprofExtFlush();
    }
    aclprofModelUnSubscribe(m);
    pthread_join(t, NULL);
    printf("%ld records\n", got);
    return got == bursts * 1024L ? 0 : 2;
}
