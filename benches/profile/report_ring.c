/* Profile target: one thread reports 200 000 ops into a ring subscription that no reader
 * drains (the lane is large enough), so the profile shows the reporting path alone. */
#include <stdio.h>

#include "acl/acl_prof_ext.h"

int main(void) {
    uint32_t m = 0;
    int fd = -1;
    if (aclprofExtModelLoad("profile", 0, &m) || aclprofExtRingSubscribe(m, NULL, 1 << 18, &fd)) return 1;
    for (uint64_t i = 0; i < 200000; i++)
        aclprofExtReportOp(m, "resnet50/layer3/block4/conv2/Conv2D", "Conv2D", i * 1000, i * 1000 + 700);
    return 0;
}
