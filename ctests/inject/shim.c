/* LD_PRELOAD fault injection for file mode's data files: the raw op files (paths containing
 * "/data/aclprof_ops.") or, with INJECT_PATH, any path containing that text (the host event
 * log: "aclprof_host"). Environment:
 *   INJECT_ERRNO   errno to fail with (default ENOSPC)
 *   INJECT_AFTER   how many writes to such files succeed before every later one fails
 *   INJECT_OPEN    if set, opening such files fails instead (with INJECT_ERRNO)          */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *mark(void) {
    const char *p = getenv("INJECT_PATH");
    return p ? p : "/data/aclprof_ops.";
}

static int fault_errno(void) {
    const char *e = getenv("INJECT_ERRNO");
    return e ? atoi(e) : ENOSPC;
}

static int is_raw_fd(int fd) {
    char link[64], path[1024];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = 0;
    return strstr(path, mark()) != NULL;
}

ssize_t write(int fd, const void *buf, size_t len) {
    static ssize_t (*real)(int, const void *, size_t);
    static long writes;
    if (!real) real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    if (!getenv("INJECT_OPEN") && is_raw_fd(fd)) {
        const char *a = getenv("INJECT_AFTER");
        if (__atomic_fetch_add(&writes, 1, __ATOMIC_RELAXED) >= (a ? atol(a) : 0)) {
            errno = fault_errno();
            return -1;
        }
    }
    return real(fd, buf, len);
}

static int opened(const char *path, int flags, mode_t mode, int (*real)(const char *, int, ...)) {
    if (getenv("INJECT_OPEN") && path && strstr(path, mark())) {
        errno = fault_errno();
        return -1;
    }
    return real(path, flags, mode);
}

int open64(const char *path, int flags, ...) {
    static int (*real)(const char *, int, ...);
    if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open64");
    va_list ap;
    va_start(ap, flags);
    mode_t mode = (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;
    va_end(ap);
    return opened(path, flags, mode, real);
}

int open(const char *path, int flags, ...) {
    static int (*real)(const char *, int, ...);
    if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    va_list ap;
    va_start(ap, flags);
    mode_t mode = (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;
    va_end(ap);
    return opened(path, flags, mode, real);
}
