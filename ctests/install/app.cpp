// A C++ program against an installed aclprof: the headers compile as C++, the version
// macros match the library, and a model runs through the runtime API with a subscriber
// counting its records through the batch decoder.
#include "acl/acl.h"
#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

static void check(aclError ret, const char *what)
{
    if (ret != ACL_SUCCESS) {
        std::fprintf(stderr, "%s failed: %d (%s)\n", what, ret, aclGetRecentErrMsg());
        std::exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: app MODEL\n");
        return 2;
    }
    if (std::string(aclprofExtVersion()) != ACLPROF_VERSION) {
        std::fprintf(stderr, "header %s, library %s\n", ACLPROF_VERSION, aclprofExtVersion());
        return 1;
    }
    check(aclInit(nullptr), "aclInit");
    check(aclrtSetDevice(0), "aclrtSetDevice");
    uint32_t model = 0;
    check(aclmdlLoadFromFile(argv[1], &model), "aclmdlLoadFromFile");
    aclmdlDataset *in = aclmdlCreateDataset(), *out = aclmdlCreateDataset();

    int fd[2];
    if (pipe(fd) != 0) {
        return 1;
    }
    aclprofSubscribeConfig *cfg = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &fd[1]);
    check(aclprofModelSubscribe(model, cfg), "aclprofModelSubscribe");
    size_t records = 0;
    std::thread reader([&] {
        std::vector<char> buf(512 * 64);
        size_t have = 0;
        ssize_t n;
        while ((n = read(fd[0], buf.data() + have, buf.size() - have)) > 0) {
            have += static_cast<size_t>(n);
            size_t whole = have - have % 512;
            uint32_t count = 0;
            check(aclprofExtDecodeOps(buf.data(), whole, nullptr, 0, &count), "aclprofExtDecodeOps");
            records += count;
            have -= whole;
            std::copy(buf.begin() + whole, buf.begin() + whole + have, buf.begin());
        }
    });
    check(aclmdlExecute(model, in, out), "aclmdlExecute");
    check(aclprofModelUnSubscribe(model), "aclprofModelUnSubscribe");
    reader.join();
    check(aclprofDestroySubscribeConfig(cfg), "aclprofDestroySubscribeConfig");
    check(aclmdlDestroyDataset(in), "aclmdlDestroyDataset");
    check(aclmdlDestroyDataset(out), "aclmdlDestroyDataset");
    check(aclmdlUnload(model), "aclmdlUnload");
    check(aclrtResetDevice(0), "aclrtResetDevice");
    check(aclFinalize(), "aclFinalize");
    std::printf("aclprof %s: %zu records\n", aclprofExtVersion(), records);
    return 0;
}
