#include "zarrflow/pipeline/batch_engine.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <list>
#include <mutex>
#include <new>

#ifdef __linux__
#include <pthread.h>
#endif

namespace zarrflow {
namespace {

// A batch made (or failed), waiting for the consumer.
struct Made {
  Status status;
  MadeBatch batch;
  int worker = 0;
  double start = 0, end = 0, share = 0;
};

struct Pass {
  BatchEngine::PassId id = 0;
  std::vector<BatchJob> jobs;
  bool read_ahead = false;
  std::size_t next = 0;   // the next batch to start
  std::size_t taken = 0;  // batches handed to the consumer
  std::size_t ready = 0;  // made, not yet taken
  std::size_t producing = 0;
  std::vector<std::optional<Made>> made;
  bool failed = false;   // a batch failed: none starts after it
  bool dropped = false;  // gone for the consumer; kept until its batches being made are done

  bool startable() const { return !failed && !dropped && next < jobs.size(); }
};

Result<MadeBatch> make_guarded(BatchMaker& maker, const BatchJob& job, int worker, double share) {
  try {
    return maker.make(job, worker, share);
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceExhausted, "out of memory making a batch");
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternal, std::string("making a batch: ") + e.what());
  }
}

void name_thread(int worker) {
#ifdef __linux__
  const std::string name = "zarrflow-load-" + std::to_string(worker);
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
#endif
}

}  // namespace

struct BatchEngine::Shared {
  std::shared_ptr<BatchMaker> maker;
  BatchEngineOptions options;
  mutable std::mutex mu;
  std::condition_variable cv;
  std::list<std::shared_ptr<Pass>> passes;  // in submission order
  PassId next_id = 1;
  std::size_t in_flight = 0;
  std::size_t producing = 0;
  int idle = 0;
  int live = 0;
  bool closed = false;

  std::shared_ptr<Pass> find(PassId id) const {
    for (const auto& p : passes)
      if (p->id == id && !p->dropped) return p;
    return nullptr;
  }
  std::shared_ptr<Pass> first_startable() const {
    for (const auto& p : passes)
      if (p->startable()) return p;
    return nullptr;
  }
  bool can_start() const {
    return in_flight < std::size_t(options.depth) && first_startable() != nullptr;
  }
  // Drops `p` (under the lock): its made batches are moved to `gone`, to be freed unlocked.
  void drop(const std::shared_ptr<Pass>& p, std::vector<Made>& gone) {
    p->dropped = true;
    for (auto& m : p->made) {
      if (!m) continue;
      gone.push_back(std::move(*m));
      m.reset();
      --in_flight;
    }
    p->ready = 0;
    if (p->producing == 0) passes.remove(p);
  }
};

double BatchEngine::clock() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

Result<std::unique_ptr<BatchEngine>> BatchEngine::create(std::shared_ptr<BatchMaker> maker,
                                                         const BatchEngineOptions& options) {
  if (maker == nullptr || options.workers < 1 || options.depth < 1)
    return invalid_argument("batch engine: need a maker, workers >= 1 and depth >= 1, got " +
                            std::to_string(options.workers) + " and " +
                            std::to_string(options.depth));
  std::unique_ptr<BatchEngine> e(new BatchEngine(std::move(maker), options));
  for (int w = 0; w < options.workers; ++w) {
    try {
      e->threads_.emplace_back([engine = e.get(), w] { engine->work(w); });
    } catch (const std::system_error& err) {
      if (w == 0)
        return Status(ErrorCode::kResourceExhausted,
                      std::string("batch engine: cannot start a worker thread: ") + err.what());
      break;  // the workers the operating system allowed
    }
  }
  e->workers_ = int(e->threads_.size());
  std::lock_guard lock(e->s_->mu);
  e->s_->live = e->workers_;
  return e;
}

BatchEngine::BatchEngine(std::shared_ptr<BatchMaker> maker, const BatchEngineOptions& options)
    : s_(std::make_unique<Shared>()), pid_(long(getpid())) {
  s_->maker = std::move(maker);
  s_->options = options;
}

BatchEngine::~BatchEngine() {
  if (long(getpid()) != pid_) {
    // A forked child: the workers are not here, and their locks may be held for good.
    for (auto& t : threads_) t.detach();
    (void)s_.release();
    return;
  }
  close();
}

bool BatchEngine::open() const { return long(getpid()) == pid_ && !closed_.load(); }

void BatchEngine::close() {
  if (long(getpid()) != pid_) return;
  closed_ = true;
  std::vector<Made> gone;
  {
    std::lock_guard lock(s_->mu);
    s_->closed = true;
    for (auto p : std::list<std::shared_ptr<Pass>>(s_->passes))
      if (!p->dropped) s_->drop(p, gone);
  }
  s_->cv.notify_all();
  for (auto& t : threads_)
    if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
}

BatchEngine::PassId BatchEngine::submit(std::vector<BatchJob> jobs, bool read_ahead) {
  auto p = std::make_shared<Pass>();
  p->made.resize(jobs.size());
  p->jobs = std::move(jobs);
  p->read_ahead = read_ahead;
  {
    std::lock_guard lock(s_->mu);
    p->id = s_->next_id++;
    if (!s_->closed) s_->passes.push_back(p);
  }
  s_->cv.notify_all();
  return p->id;
}

void BatchEngine::work(int worker) {
  name_thread(worker);
  Shared& s = *s_;
  std::unique_lock lock(s.mu);
  while (true) {
    ++s.idle;
    s.cv.wait(lock, [&] { return s.closed || s.can_start(); });
    --s.idle;
    if (s.closed) break;
    std::shared_ptr<Pass> p = s.first_startable();
    const std::size_t i = p->next++;
    ++s.in_flight;
    ++s.producing;
    ++p->producing;
    lock.unlock();
    Made m;
    m.worker = worker;
    m.share = s.options.balance ? s.options.balance->share() : s.options.host_share;
    m.start = clock();
    Result<MadeBatch> r = make_guarded(*s.maker, p->jobs[i], worker, m.share);
    m.end = clock();
    if (r.ok()) {
      m.batch = std::move(r).value();
    } else {
      m.status = std::move(r).take_status();
    }
    lock.lock();
    --s.producing;
    --p->producing;
    if (!m.status.ok()) p->failed = true;
    if (p->dropped) {
      --s.in_flight;  // nobody takes it: its place goes to the other passes
      if (p->producing == 0) s.passes.remove(p);
      lock.unlock();
      m = Made{};  // its memory goes back without the lock held
      lock.lock();
    } else {
      p->made[i] = std::move(m);
      ++p->ready;
    }
    s.cv.notify_all();
  }
  --s.live;
}

Result<BatchEngine::Taken> BatchEngine::take(PassId id) {
  Taken out;
  TakenBatch& t = out.batch;
  t.asked = clock();
  std::unique_lock lock(s_->mu);
  std::shared_ptr<Pass> p = s_->find(id);
  if (p == nullptr) return out;  // kClosed
  if (p->taken >= p->jobs.size()) {
    out.outcome = Outcome::kPassEnded;
    return out;
  }
  t.ready = long(p->ready);
  const std::size_t i = p->taken;
  // A batch that will never start (its pass failed before it) ends the pass like a drop.
  s_->cv.wait(lock,
              [&] { return p->made[i].has_value() || p->dropped || (i >= p->next && p->failed); });
  if (!p->made[i]) return out;
  Made m = std::move(*p->made[i]);
  p->made[i].reset();
  --p->ready;
  ++p->taken;
  --s_->in_flight;
  t.all_started = p->next >= p->jobs.size();
  const bool read_ahead = p->read_ahead;
  lock.unlock();
  s_->cv.notify_all();
  t.taken = clock();
  if (!m.status.ok()) return std::move(m.status);
  t.worker = m.worker;
  t.start = m.start;
  t.end = m.end;
  t.share = m.share;
  t.batch = std::move(m.batch);
  if (DecodeBalance* balance = s_->options.balance.get()) {
    if (i == 0) balance->new_pass();
    // The first batches of a pass nobody read ahead are always waited for, and a batch made
    // while the pools grew waited for the driver, not the host's decoding.
    t.judged = !t.batch.pools_grew && (read_ahead || i >= std::size_t(workers_));
    balance->observe(t.asked, t.taken, t.ready, t.share, t.judged);
  }
  out.outcome = Outcome::kBatch;
  return out;
}

void BatchEngine::drop(PassId id) {
  std::vector<Made> gone;
  {
    std::lock_guard lock(s_->mu);
    if (auto p = s_->find(id)) s_->drop(p, gone);
  }
  s_->cv.notify_all();
}

BatchEngine::PassCounts BatchEngine::counts(PassId id) const {
  std::lock_guard lock(s_->mu);
  auto p = s_->find(id);
  if (p == nullptr) return {};
  return {p->jobs.size(), p->next, p->ready, p->taken};
}

std::size_t BatchEngine::in_flight() const {
  std::lock_guard lock(s_->mu);
  return s_->in_flight;
}

std::size_t BatchEngine::producing() const {
  std::lock_guard lock(s_->mu);
  return s_->producing;
}

int BatchEngine::idle_workers() const {
  std::lock_guard lock(s_->mu);
  return s_->idle;
}

int BatchEngine::live_workers() const {
  std::lock_guard lock(s_->mu);
  return s_->live;
}

}  // namespace zarrflow
