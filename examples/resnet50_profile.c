/* aclprof's main example: profile an emulated ResNet-50 end to end.
 *
 * The application does what a CANN inference app does: it loads a model, subscribes to
 * its op data through a pipe (aclprofCreateSubscribeConfig + aclprofModelSubscribe), runs
 * a reader thread that decodes the records with the aclprofGetOp* accessors, executes the
 * model several times, unsubscribes (the reader then sees end of file) and prints a
 * per-op-type summary. Only model loading and execution differ from CANN: there is no NPU,
 * so the model simulator of acl/acl_prof_ext.h "executes" a model description.
 *
 *   usage: resnet50_profile [MODEL.json|op_summary.csv] [EXECUTIONS]        */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl/acl_prof.h"
#include "acl/acl_prof_ext.h"

#define CHECK_ACL(call)                                                                     \
    do {                                                                                    \
        aclError e_ = (call);                                                               \
        if (e_ != ACL_SUCCESS) {                                                            \
            fprintf(stderr, "%s failed: %d (%s)\n", #call, e_, aclGetRecentErrMsg());       \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define MAX_TYPES 64

typedef struct {
    char type[65];
    uint64_t count, total_ns;
} TypeStat;

static TypeStat g_types[MAX_TYPES];
static int g_ntypes;
static uint64_t g_records, g_first_start = UINT64_MAX, g_last_end;

static TypeStat *stat_for(const char *type) {
    for (int i = 0; i < g_ntypes; i++)
        if (strcmp(g_types[i].type, type) == 0) return &g_types[i];
    if (g_ntypes == MAX_TYPES) return NULL;
    TypeStat *s = &g_types[g_ntypes++];
    snprintf(s->type, sizeof s->type, "%s", type);
    return s;
}

/* The reader thread of CANN's sample: read whole records, decode each in place. */
static void *reader(void *arg) {
    int fd = *(int *)arg;
    size_t desc = 0;
    CHECK_ACL(aclprofGetOpDescSize(&desc));
    size_t cap = desc * 64;
    char *buf = malloc(cap);
    for (;;) {
        ssize_t n = read(fd, buf, cap);
        if (n == 0) break; /* unsubscribed: the library closed the write end */
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("read");
            break;
        }
        uint32_t num = 0;
        CHECK_ACL(aclprofGetOpNum(buf, (size_t)n, &num));
        for (uint32_t i = 0; i < num; i++) {
            char type[65];
            size_t len = 0;
            CHECK_ACL(aclprofGetOpTypeLen(buf, (size_t)n, i, &len));
            if (len > sizeof type) len = sizeof type; /* types are at most 64 bytes + NUL */
            CHECK_ACL(aclprofGetOpType(buf, (size_t)n, i, type, len));
            uint64_t start = aclprofGetOpStart(buf, (size_t)n, i);
            uint64_t end = aclprofGetOpEnd(buf, (size_t)n, i);
            TypeStat *s = stat_for(type);
            if (s) {
                s->count++;
                s->total_ns += aclprofGetOpDuration(buf, (size_t)n, i);
            }
            if (start < g_first_start) g_first_start = start;
            if (end > g_last_end) g_last_end = end;
            g_records++;
        }
    }
    free(buf);
    return NULL;
}

static int by_total(const void *a, const void *b) {
    const TypeStat *x = a, *y = b;
    return x->total_ns < y->total_ns ? 1 : x->total_ns > y->total_ns ? -1 : 0;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "models/resnet50.json";
    int executions = 10;
    if (argc > 2) {
        char *end = NULL;
        long n = strtol(argv[2], &end, 10);
        if (end == argv[2] || *end != '\0' || n < 1 || n > 1000000) {
            fprintf(stderr, "usage: %s [MODEL.json|op_summary.csv] [EXECUTIONS 1..1000000], not \"%s\"\n",
                    argv[0], argv[2]);
            return 2;
        }
        executions = (int)n;
    }

    uint32_t model = 0;
    CHECK_ACL(aclprofExtSimModelLoad(path, &model));

    int fd[2];
    if (pipe(fd) != 0) {
        perror("pipe");
        return 1;
    }
    aclprofSubscribeConfig *config = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &fd[1]);
    if (!config) {
        fprintf(stderr, "aclprofCreateSubscribeConfig: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    CHECK_ACL(aclprofModelSubscribe(model, config));

    pthread_t tid;
    int read_fd = fd[0];
    pthread_create(&tid, NULL, reader, &read_fd);
    for (int i = 0; i < executions; i++) CHECK_ACL(aclprofExtSimModelExecute(model));
    CHECK_ACL(aclprofModelUnSubscribe(model)); /* flushes, closes fd[1], sets it to -1 */
    pthread_join(tid, NULL);
    close(fd[0]);
    CHECK_ACL(aclprofDestroySubscribeConfig(config));

    aclprofExtStats st;
    CHECK_ACL(aclprofExtGetStats(&st));
    qsort(g_types, (size_t)g_ntypes, sizeof g_types[0], by_total);
    uint64_t all = 0;
    for (int i = 0; i < g_ntypes; i++) all += g_types[i].total_ns;

    printf("model %s (id %u): %d executions, %llu ops decoded from the pipe "
           "(reported %llu, delivered %llu, dropped %llu)\n",
           path, model, executions, (unsigned long long)g_records, (unsigned long long)st.recordsReported,
           (unsigned long long)st.recordsDelivered, (unsigned long long)st.recordsDropped);
    printf("device time %.3f ms over a wall span of %.3f ms\n\n", (double)all / 1e6,
           (double)(g_last_end - g_first_start) / 1e6);
    /* The type column is as wide as the longest type (a replayed table's can be long). */
    int w = (int)strlen("Op Type");
    for (int i = 0; i < g_ntypes; i++)
        if ((int)strlen(g_types[i].type) > w) w = (int)strlen(g_types[i].type);
    printf("%-*s %8s %14s %12s %8s\n", w, "Op Type", "Count", "Total (us)", "Mean (us)", "Share");
    for (int i = 0; i < w; i++) putchar('-');
    printf(" %8s %14s %12s %8s\n", "-----", "----------", "---------", "-----");
    for (int i = 0; i < g_ntypes; i++) {
        TypeStat *s = &g_types[i];
        printf("%-*s %8llu %14.3f %12.3f %7.2f%%\n", w, s->type, (unsigned long long)s->count,
               (double)s->total_ns / 1e3, (double)s->total_ns / 1e3 / (double)s->count,
               100.0 * (double)s->total_ns / (double)all);
    }
    printf("%-*s %8llu %14.3f\n", w, "total", (unsigned long long)g_records, (double)all / 1e3);
    return g_records == st.recordsDelivered && st.recordsDropped == 0 ? 0 : 1;
}
