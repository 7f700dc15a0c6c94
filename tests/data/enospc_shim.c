/* A full device without privileges, for tests/tests/output_failures.rs:
 * an LD_PRELOAD shim over write(2). Writes that grow a regular file under
 * the directory $COSIM_ENOSPC_DIR take from a budget of
 * $COSIM_ENOSPC_BYTES new bytes for all such files; once it is spent they
 * fail with ENOSPC (a write that crosses it writes what fits first), as on
 * a device that fills up. Writes within a file's current size (space
 * reserved earlier, overwritten in place) succeed, as they do on a full
 * device. Other files and descriptors are untouched. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static ssize_t (*real_write)(int, const void *, size_t);
static const char *dir;
static size_t dir_len;
static long long budget;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void init(void) {
    real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    dir = getenv("COSIM_ENOSPC_DIR");
    dir_len = dir ? strlen(dir) : 0;
    const char *b = getenv("COSIM_ENOSPC_BYTES");
    budget = b ? atoll(b) : 0;
}

/* Whether descriptor fd is a file under dir. */
static int watched(int fd) {
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) {
        return 0;
    }
    path[n] = 0;
    return strncmp(path, dir, dir_len) == 0 && (path[dir_len] == '/' || path[dir_len] == 0);
}

ssize_t write(int fd, const void *buf, size_t count) {
    pthread_once(&once, init);
    struct stat st;
    if (!dir || count == 0 || !watched(fd) || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        return real_write(fd, buf, count);
    }
    off_t pos = lseek(fd, 0, SEEK_CUR);
    if (pos < 0) {
        return real_write(fd, buf, count);
    }
    /* The bytes this write adds beyond the end of the file. */
    long long start = pos > st.st_size ? pos : st.st_size;
    long long grow = (long long)pos + (long long)count - start;
    if (grow <= 0) {
        return real_write(fd, buf, count);
    }
    pthread_mutex_lock(&lock);
    if (budget <= 0) {
        pthread_mutex_unlock(&lock);
        errno = ENOSPC;
        return -1;
    }
    if (grow > budget) {
        count -= (size_t)(grow - budget);
        grow = budget;
    }
    ssize_t written = real_write(fd, buf, count);
    if (written > 0) {
        long long grown = (long long)pos + written - start;
        budget -= grown > 0 ? grown : 0;
    }
    pthread_mutex_unlock(&lock);
    return written;
}
