// Tests of what a forked child inherits: run a function in a child, wait for it without hanging.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace zarrflow::fork_test {

// Forks; the child runs `child` (returning its exit code) and _exits, never returning into
// GoogleTest. The parent waits at most `limit`, then kills the child. Returns "exit <code>",
// "signal <n>", "hung" (killed) or "fork failed".
template <class F>
std::string in_forked_child(F&& child, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    int code = 99;
    try {
      code = child();
    } catch (...) {
    }
    _exit(code);
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) return "waitpid failed";
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return "hung";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

}  // namespace zarrflow::fork_test
