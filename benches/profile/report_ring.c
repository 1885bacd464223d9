/* Profile target: one thread reports N ops (argv[1], default 200 000) into a ring
 * subscription that no reader drains (the lane is large enough), so the profile shows the
 * reporting path alone. argv[2] is how: "name" (aclprofExtReportOp, the default),
 * "registered" (the op registered once, aclprofExtReportRegisteredOp) or "len"
 * (aclprofExtReportOpLen). scripts/instructions runs it at two sizes and divides the
 * difference: instructions per op, without the setup. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl_prof_ext.h"

#define NAME "resnet50/layer3/block4/conv2/Conv2D"
#define TYPE "Conv2D"

int main(int argc, char **argv) {
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;
    const char *how = argc > 2 ? argv[2] : "name";
    uint32_t m = 0, op = 0;
    int fd = -1;
    if (n > 250000 || aclprofExtModelLoad("profile", 0, &m) ||
        aclprofExtRingSubscribe(m, NULL, 1 << 18, &fd) ||
        aclprofExtOpRegister(NAME, strlen(NAME), TYPE, strlen(TYPE), 0, &op))
        return 1;
    if (strcmp(how, "registered") == 0) {
        for (uint64_t i = 0; i < n; i++) aclprofExtReportRegisteredOp(m, op, i * 1000, i * 1000 + 700);
    } else if (strcmp(how, "len") == 0) {
        for (uint64_t i = 0; i < n; i++)
            aclprofExtReportOpLen(m, NAME, sizeof NAME - 1, TYPE, sizeof TYPE - 1, i * 1000, i * 1000 + 700);
    } else {
        for (uint64_t i = 0; i < n; i++) aclprofExtReportOp(m, NAME, TYPE, i * 1000, i * 1000 + 700);
    }
    return 0;
}
