/*
 * Disk faults for the SQLite store's durability tests, loaded into the api process with LD_PRELOAD.
 * Once the file named by PLANT_FAULT_MARKER exists, calls on the database's write-ahead log (an open
 * file whose path ends in "-wal") fail with EIO: every fdatasync when PLANT_FAULT=fdatasync (the
 * sync after a COMMIT), every pwrite64 when PLANT_FAULT=wal-write (the COMMIT itself). Every other
 * call goes through to libc unchanged.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static int armed(const char *fault) {
  const char *which = getenv("PLANT_FAULT");
  const char *marker = getenv("PLANT_FAULT_MARKER");
  return which != NULL && marker != NULL && strcmp(which, fault) == 0 && access(marker, F_OK) == 0;
}

static int is_wal(int fd) {
  char link[64];
  char path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n < 4) return 0;
  path[n] = '\0';
  return strcmp(path + n - 4, "-wal") == 0;
}

int fdatasync(int fd) {
  static int (*real)(int);
  if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  if (armed("fdatasync") && is_wal(fd)) {
    errno = EIO;
    return -1;
  }
  return real(fd);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
  static ssize_t (*real)(int, const void *, size_t, off_t);
  if (real == NULL) real = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
  if (armed("wal-write") && is_wal(fd)) {
    errno = EIO;
    return -1;
  }
  return real(fd, buf, count, offset);
}
