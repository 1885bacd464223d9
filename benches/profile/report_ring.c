/* Profile target: one thread reports N ops (argv[1], default 200 000) into a ring
 * subscription that no reader drains (the lane is large enough), so the profile shows the
 * reporting path alone. scripts/instructions runs it at two sizes and divides the
 * difference: instructions per op, without the setup. */
#include <stdio.h>
#include <stdlib.h>

#include "acl/acl_prof_ext.h"

int main(int argc, char **argv) {
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;
    uint32_t m = 0;
    int fd = -1;
    if (n > 250000 || aclprofExtModelLoad("profile", 0, &m) ||
        aclprofExtRingSubscribe(m, NULL, 1 << 18, &fd))
        return 1;
    for (uint64_t i = 0; i < n; i++)
        aclprofExtReportOp(m, "resnet50/layer3/block4/conv2/Conv2D", "Conv2D", i * 1000, i * 1000 + 700);
    return 0;
}
