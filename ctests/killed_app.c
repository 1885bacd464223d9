/* Starts file-mode profiling, runs a model, makes sure the data reached disk
 * (aclprofExtFlush), then dies with SIGKILL before aclprofStop. The test then exports the
 * directory it left behind with aclprofExtExport.
 *   usage: killed_app RESULT_DIR MODEL.json EXECUTIONS                              */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    uint32_t dev[] = {0}, m = 0;
    if (aclprofInit(argv[1], strlen(argv[1])) != ACL_SUCCESS) return 3;
    aclprofConfig *c = aclprofCreateConfig(dev, 1, ACL_AICORE_NONE, NULL, ACL_PROF_TASK_TIME | ACL_PROF_ACL_API);
    if (!c || aclprofStart(c) != ACL_SUCCESS) return 4;
    if (aclprofExtSimModelLoad(argv[2], &m) != ACL_SUCCESS) return 5;
    for (int i = 0; i < atoi(argv[3]); i++)
        if (aclprofExtSimModelExecute(m) != ACL_SUCCESS) return 6;
    if (aclprofExtFlush() != ACL_SUCCESS) return 7;
    raise(SIGKILL);
    return 8;
}
