/* Linked into the wheel's extension module (scripts/build_wheels.sh) and nowhere else.
 *
 * The wheel is compiled against glibc 2.27 headers (its manylinux floor) but links GCC 12's
 * libstdc++.a statically, and Debian's libstdc++.a was compiled against glibc 2.36: two of its
 * objects reference glibc symbols that 2.27 lacks. Hidden definitions here satisfy them inside
 * the extension, so it loads on any glibc >= 2.27:
 *  - __libc_single_threaded (glibc 2.32): libstdc++ skips atomic reference counting while it
 *    is non-zero; 0 keeps the always-correct atomic path.
 *  - arc4random (glibc 2.36): std::random_device's default source; served from getrandom(2)
 *    (glibc 2.25), falling back to /dev/urandom.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#define ZF_HIDDEN __attribute__((visibility("hidden")))

ZF_HIDDEN char __libc_single_threaded = 0;

static int read_urandom(void* buf, size_t n) {
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char*)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  return got == n ? 0 : -1;
}

ZF_HIDDEN unsigned int arc4random(void) {
  unsigned int v = 0;
  ssize_t r;
  do {
    r = getrandom(&v, sizeof v, 0);
  } while (r < 0 && errno == EINTR);
  if (r != (ssize_t)sizeof v && read_urandom(&v, sizeof v) != 0) {
    /* No entropy source at all: std::random_device only seeds retry jitter here. */
    v = (unsigned int)getpid() * 2654435761u;
  }
  return v;
}
