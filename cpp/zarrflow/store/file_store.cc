#include "zarrflow/store/file_store.h"

#include "zarrflow/store/byte_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

// glibc before 2.32 names no SYS_openat2 (the wheels build against glibc 2.27); the kernel's
// header, which defines open_how, has its number.
#ifndef SYS_openat2
#define SYS_openat2 __NR_openat2
#endif

namespace zarrflow {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

long sys_openat2(int dirfd, const char* path, int flags) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  return syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

class FdGuard {
 public:
  explicit FdGuard(int fd) : fd_(fd) {}
  ~FdGuard() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  [[nodiscard]] int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Reads exactly n bytes at offset; returns the count actually read (short only at EOF).
Result<std::size_t> pread_full(int fd, std::byte* dst, std::size_t n, std::uint64_t offset,
                               const std::string& what) {
  std::size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, dst + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return io_error(what + ": read failed: " + errno_text(errno));
    }
    if (r == 0) break;
    done += static_cast<std::size_t>(r);
  }
  return done;
}

}  // namespace

Result<std::shared_ptr<FileStore>> FileStore::open(const std::string& root) {
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return not_found("no such directory '" + root + "'");
    if (err == ENOTDIR) return not_found("'" + root + "' is not a directory");
    return io_error("cannot open '" + root + "': " + errno_text(err));
  }
  char real[PATH_MAX];
  if (::realpath(root.c_str(), real) == nullptr) {
    ::close(fd);
    return io_error("cannot resolve '" + root + "': " + errno_text(errno));
  }
  return std::shared_ptr<FileStore>(new FileStore(root, real, fd));
}

FileStore::FileStore(std::string root, std::string real_root, int root_fd)
    : root_(std::move(root)),
      real_root_(std::move(real_root)),
      root_fd_(root_fd),
      pool_(std::size_t{256} << 20) {
  long probe = sys_openat2(root_fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  have_openat2_ = probe >= 0;
  if (probe >= 0) ::close(static_cast<int>(probe));
}

FileStore::~FileStore() { ::close(root_fd_); }

std::string FileStore::describe_key(std::string_view key) const {
  return join_key(root_, printable_key(key));
}

Result<int> FileStore::open_key(std::string_view key, int flags) const {
  // The root ("") names a directory to list, never a value.
  ZF_RETURN_IF_ERROR(validate_key(key, /*allow_empty=*/(flags & O_DIRECTORY) != 0));
  const std::string k = key.empty() ? "." : std::string(key);
  if (have_openat2_) {
    long r = sys_openat2(root_fd_, k.c_str(), flags | O_CLOEXEC);
    if (r >= 0) return static_cast<int>(r);
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return -1;
    if (err != EXDEV && err != ELOOP)
      return io_error(describe_key(key) + ": cannot open: " + errno_text(err));
    // RESOLVE_BENEATH also refuses absolute symlinks that stay inside the root: decide by the
    // resolved path below.
  }
  const std::string full = real_root_ + "/" + k;
  char real[PATH_MAX];
  if (::realpath(full.c_str(), real) == nullptr) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return -1;
    return io_error(describe_key(key) + ": cannot resolve: " + errno_text(err));
  }
  std::string_view rv(real);
  if (!(rv == real_root_ ||
        (rv.size() > real_root_.size() && rv.substr(0, real_root_.size()) == real_root_ &&
         rv[real_root_.size()] == '/')))
    return path_escape(describe_key(key) + " resolves to '" + std::string(rv) +
                       "', outside the store root");
  const int fd = ::open(real, flags | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return -1;
    return io_error(describe_key(key) + ": cannot open: " + errno_text(err));
  }
  return fd;
}

Result<int> FileStore::open_value(std::string_view key, std::uint64_t* size) const {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. Regular files
  // ignore the flag, and nothing but regular files is read.
  ZF_ASSIGN_OR_RETURN(int raw_fd, open_key(key, O_RDONLY | O_NONBLOCK));
  if (raw_fd < 0) return -1;
  FdGuard fd(raw_fd);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0)
    return io_error(describe_key(key) + ": stat failed: " + errno_text(errno));
  // A directory where a value should be is neither a value nor a missing key (reading it as
  // missing would silently turn it into fill values); nor is a FIFO, socket or device.
  if (!S_ISREG(st.st_mode))
    return io_error(describe_key(key) + " is " + file_kind(st.st_mode) + ", not a value");
  *size = static_cast<std::uint64_t>(st.st_size);
  return fd.release();
}

Result<std::optional<Buffer>> FileStore::get(std::string_view key, std::uint64_t max_size) const {
  std::uint64_t size = 0;
  ZF_ASSIGN_OR_RETURN(int raw_fd, open_value(key, &size));
  if (raw_fd < 0) return std::optional<Buffer>();
  FdGuard fd(raw_fd);
  if (size > max_size) return value_too_large(describe_key(key), size, max_size);
  Buffer b = pool_.acquire(static_cast<std::size_t>(size));
  ZF_ASSIGN_OR_RETURN(std::size_t n,
                      pread_full(fd.get(), b.data(), b.size(), 0, describe_key(key)));
  b.resize(n);  // a file that shrank under us reads short; codecs then report the size mismatch
  return std::optional<Buffer>(std::move(b));
}

Result<std::optional<std::vector<Buffer>>> FileStore::get_ranges(
    std::string_view key, std::span<const ByteRange> ranges) const {
  std::uint64_t size = 0;
  ZF_ASSIGN_OR_RETURN(int raw_fd, open_value(key, &size));
  if (raw_fd < 0) return std::optional<std::vector<Buffer>>();
  FdGuard fd(raw_fd);
  std::vector<Buffer> out;
  out.reserve(ranges.size());
  for (const auto& r : ranges) {
    ZF_ASSIGN_OR_RETURN(ByteRange abs, resolve_range(r, size, describe_key(key)));
    Buffer b = pool_.acquire(abs.length);
    ZF_ASSIGN_OR_RETURN(std::size_t n,
                        pread_full(fd.get(), b.data(), abs.length, abs.offset, describe_key(key)));
    if (n != abs.length)
      return corrupt_data(describe_key(key) + ": short read of " + abs.to_string());
    out.push_back(std::move(b));
  }
  return std::optional(std::move(out));
}

Result<bool> FileStore::read_exact(std::string_view key, ByteSpan dst) const {
  std::uint64_t size = 0;
  ZF_ASSIGN_OR_RETURN(int raw_fd, open_value(key, &size));
  if (raw_fd < 0) return false;
  FdGuard fd(raw_fd);
  if (size != dst.size())
    return corrupt_data(describe_key(key) + " has " + std::to_string(size) + " bytes, expected " +
                        std::to_string(dst.size()));
  ZF_ASSIGN_OR_RETURN(std::size_t n,
                      pread_full(fd.get(), dst.data(), dst.size(), 0, describe_key(key)));
  if (n != dst.size())
    return corrupt_data(describe_key(key) + ": short read (" + std::to_string(n) + " of " +
                        std::to_string(dst.size()) + " bytes)");
  return true;
}

Result<bool> FileStore::read_range_into(std::string_view key, std::uint64_t offset,
                                        ByteSpan dst) const {
  std::uint64_t size = 0;
  ZF_ASSIGN_OR_RETURN(int raw_fd, open_value(key, &size));
  if (raw_fd < 0) return false;
  FdGuard fd(raw_fd);
  ZF_ASSIGN_OR_RETURN(std::size_t n,
                      pread_full(fd.get(), dst.data(), dst.size(), offset, describe_key(key)));
  if (n != dst.size())
    return corrupt_data(describe_key(key) + ": short read of " +
                        ByteRange::of(offset, dst.size()).to_string());
  return true;
}

std::string FileStore::path_of(std::string_view key) const {
  return root_ + "/" + std::string(key);
}

Result<bool> FileStore::read_direct(std::string_view key, std::uint64_t offset,
                                    std::uint64_t length, ByteSpan slot, bool* direct) const {
  constexpr std::uint64_t kBlock = 4096;
  const std::uint64_t lead = offset % kBlock;
  *direct = false;
  if (slot.size() < lead + length) return invalid_argument("read_direct: slot too small");
  std::uint64_t size = 0;
  ZF_ASSIGN_OR_RETURN(int raw_fd, open_value(key, &size));
  if (raw_fd < 0) return false;
  FdGuard fd(raw_fd);
  const std::uint64_t aligned_off = offset - lead;
  const std::uint64_t aligned_len = (lead + length + kBlock - 1) / kBlock * kBlock;
  const bool slot_ok =
      reinterpret_cast<std::uintptr_t>(slot.data()) % kBlock == 0 && slot.size() >= aligned_len;
  if (slot_ok) {
    char link[64];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd.get());
    const int dfd = ::open(link, O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (dfd >= 0) {
      FdGuard dguard(dfd);
      std::uint64_t done = 0;
      bool ok = true;
      while (done < aligned_len) {
        const ssize_t r = ::pread(dfd, slot.data() + done, aligned_len - done,
                                  static_cast<off_t>(aligned_off + done));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
          ok = false;  // e.g. EINVAL: this file system refuses O_DIRECT; read buffered below
          break;
        }
        if (r == 0) break;
        done += static_cast<std::uint64_t>(r);
      }
      if (ok) {
        if (done < lead + length)
          return corrupt_data(describe_key(key) + ": short read of " +
                              ByteRange::of(offset, length).to_string());
        if (lead) std::memmove(slot.data(), slot.data() + lead, length);
        *direct = true;
        return true;
      }
    }
  }
  ZF_ASSIGN_OR_RETURN(std::size_t n,
                      pread_full(fd.get(), slot.data(), length, offset, describe_key(key)));
  if (n != length)
    return corrupt_data(describe_key(key) + ": short read of " +
                        ByteRange::of(offset, length).to_string());
  return true;
}

Result<std::optional<std::uint64_t>> FileStore::size(std::string_view key) const {
  std::uint64_t size = 0;
  ZF_ASSIGN_OR_RETURN(int raw_fd, open_value(key, &size));
  if (raw_fd < 0) return std::optional<std::uint64_t>();
  FdGuard fd(raw_fd);
  return std::optional(size);
}

Result<std::optional<ValueVersion>> FileStore::version(std::string_view key) const {
  std::uint64_t size = 0;
  ZF_ASSIGN_OR_RETURN(int raw_fd, open_value(key, &size));  // regular files only
  if (raw_fd < 0) return std::optional<ValueVersion>();
  FdGuard fd(raw_fd);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0)
    return io_error(describe_key(key) + ": stat failed: " + errno_text(errno));
  const auto micros = static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1000000u +
                      static_cast<std::uint64_t>(st.st_mtim.tv_nsec) / 1000u;
  char etag[64];
  std::snprintf(etag, sizeof etag, "%llx-%llx-%llx", static_cast<unsigned long long>(st.st_ino),
                static_cast<unsigned long long>(micros),
                static_cast<unsigned long long>(st.st_size));
  return std::optional(ValueVersion{etag, static_cast<std::int64_t>(st.st_mtim.tv_sec)});
}

namespace {

// Walks the directory open as `dir_fd` (consumed), appending files under `prefix`.
Status walk(int dir_fd, const std::string& prefix, std::vector<ListEntry>& out,
            const std::string& what) {
  DIR* d = ::fdopendir(dir_fd);
  if (d == nullptr) {
    ::close(dir_fd);
    return io_error(what + ": cannot list: " + errno_text(errno));
  }
  Status status;
  while (dirent* e = ::readdir(d)) {
    std::string_view name(e->d_name);
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::fstatat(::dirfd(d), e->d_name, &st, 0) != 0) continue;  // dangling link: skip
    const std::string key = join_key(prefix, name);
    if (S_ISDIR(st.st_mode)) {
      if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        continue;  // never follow directory links while listing (cycles, escapes)
      int sub = ::openat(::dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (sub < 0) continue;
      status = walk(sub, key, out, what);
      if (!status.ok()) break;
    } else if (S_ISREG(st.st_mode)) {
      out.push_back({key, static_cast<std::uint64_t>(st.st_size)});
    }
  }
  ::closedir(d);
  return status;
}

}  // namespace

Result<std::vector<ListEntry>> FileStore::list(std::string_view prefix) const {
  ZF_ASSIGN_OR_RETURN(int dir_fd, open_key(prefix, O_RDONLY | O_DIRECTORY));
  std::vector<ListEntry> out;
  if (dir_fd < 0) return out;
  ZF_RETURN_IF_ERROR(walk(dir_fd, std::string(prefix), out, describe_key(prefix)));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

Result<std::vector<std::string>> FileStore::list_dir(std::string_view prefix) const {
  ZF_ASSIGN_OR_RETURN(int dir_fd, open_key(prefix, O_RDONLY | O_DIRECTORY));
  std::vector<std::string> out;
  if (dir_fd < 0) return out;
  DIR* d = ::fdopendir(dir_fd);
  if (d == nullptr) {
    ::close(dir_fd);
    return io_error(describe_key(prefix) + ": cannot list: " + errno_text(errno));
  }
  while (dirent* e = ::readdir(d)) {
    std::string_view name(e->d_name);
    if (name != "." && name != "..") out.emplace_back(name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

Status FileStore::set(std::string_view key, ConstByteSpan value) {
  ZF_RETURN_IF_ERROR(validate_key(key));
  // Create parent directories one by one below the root.
  std::string k(key);
  for (std::size_t pos = k.find('/'); pos != std::string::npos; pos = k.find('/', pos + 1)) {
    const std::string dir = k.substr(0, pos);
    if (::mkdirat(root_fd_, dir.c_str(), 0777) != 0 && errno != EEXIST)
      return io_error(describe_key(dir) + ": cannot create directory: " + errno_text(errno));
  }
  const std::string tmp = k + ".zarrflow-tmp";
  int fd = ::openat(root_fd_, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return io_error(describe_key(key) + ": cannot create: " + errno_text(errno));
  std::size_t done = 0;
  while (done < value.size()) {
    ssize_t w = ::write(fd, value.data() + done, value.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlinkat(root_fd_, tmp.c_str(), 0);
      return io_error(describe_key(key) + ": write failed: " + errno_text(err));
    }
    done += static_cast<std::size_t>(w);
  }
  ::close(fd);
  // rename makes the value appear complete or not at all.
  if (::renameat(root_fd_, tmp.c_str(), root_fd_, k.c_str()) != 0)
    return io_error(describe_key(key) + ": rename failed: " + errno_text(errno));
  return {};
}

}  // namespace zarrflow
