/* Profile target: one thread reports 2 000 000 ops as fast as it can into a pipe
 * subscription whose reader thread reads 64 KiB at a time (T1). */
#include <pthread.h>
#include <stdio.h>
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

int main(void) {
    uint32_t m = 0;
    int fds[2];
    static int w;
    if (aclprofExtModelLoad("profile", 0, &m) || pipe(fds)) return 1;
    rfd = fds[0];
    w = fds[1];
    aclprofSubscribeConfig *c = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &w);
    aclprofModelSubscribe(m, c);
    long got = 0;
    pthread_t t;
    pthread_create(&t, NULL, reader, &got);
    for (uint64_t i = 0; i < 2000000; i++)
        aclprofExtReportOp(m, "resnet50/layer3/block4/conv2/Conv2D", "Conv2D", i * 1000, i * 1000 + 700);
    aclprofModelUnSubscribe(m);
    pthread_join(t, NULL);
    printf("%ld records\n", got);
    return got == 2000000 ? 0 : 2;
}
