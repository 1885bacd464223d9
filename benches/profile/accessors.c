/* Profile target: the eight CANN accessor calls on each record of a 100-record buffer,
 * 1 000 000 times (R1). */
#include <stdio.h>
#include <unistd.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"

int main(void) {
    uint32_t m = 0;
    int fds[2];
    static int w;
    if (aclprofExtModelLoad("profile", 0, &m) || pipe(fds)) return 1;
    w = fds[1];
    aclprofSubscribeConfig *c = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &w);
    aclprofModelSubscribe(m, c);
    for (uint64_t i = 0; i < 100; i++)
        aclprofExtReportOp(m, "resnet50/layer3/block4/conv2/Conv2D", "Conv2D", i * 1000, i * 1000 + 700);
    aclprofModelUnSubscribe(m);
    static char buf[100 * 512];
    ssize_t got = read(fds[0], buf, sizeof buf);
    if (got != (ssize_t)sizeof buf) return 2;
    size_t len = (size_t)got;
    char name[64], type[16];
    unsigned long acc = 0;
    for (long k = 0; k < 1000000; k++) {
        uint32_t i = (uint32_t)(k % 100);
        size_t l;
        aclprofGetOpNameLen(buf, len, i, &l);
        aclprofGetOpName(buf, len, i, name, l);
        aclprofGetOpTypeLen(buf, len, i, &l);
        aclprofGetOpType(buf, len, i, type, l);
        acc += aclprofGetOpStart(buf, len, i) + aclprofGetOpEnd(buf, len, i) +
               aclprofGetOpDuration(buf, len, i) + aclprofGetModelId(buf, len, i);
    }
    printf("%lu\n", acc & 1);
    return 0;
}
