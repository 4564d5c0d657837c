// The loader's batch engine as Python holds it (pipeline/batch_engine.h): its plan
// (BatchPlan), its decode balance (DecodeBalance) and the engine (BatchEngine), whose workers
// make batches without the GIL. take() waits with the GIL released and returns each batch as a
// zarrflow Tensor (host memory, or a block of the GpuReader's device pool released after its
// consumers' streams, as empty_tensor's), with its report and timing.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "gpu.h"
#include "pipeline.h"
#include "status_error.h"
#include "tensor.h"
#include "zarrflow/pipeline/batch_engine.h"
#include "zarrflow/pipeline/host_batch.h"
#include "zarrflow/pipeline/shard_index_cache.h"

#ifdef ZARRFLOW_HAVE_CUDA
#include "zarrflow/pipeline/gpu/device_batch.h"
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace zarrflow::py {
namespace {

template <typename T>
using Vector = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <typename T>
using Matrix = nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

template <typename T>
std::vector<std::int64_t> values(const T& a) {
  return std::vector<std::int64_t>(a.data(), a.data() + a.size());
}

// A new NumPy int64 array of `shape` owning `v`.
nb::ndarray<nb::numpy, std::int64_t> numpy_of(std::vector<std::int64_t> v,
                                              std::initializer_list<std::size_t> shape) {
  auto* owned = new std::vector<std::int64_t>(std::move(v));
  nb::capsule owner(owned,
                    [](void* p) noexcept { delete static_cast<std::vector<std::int64_t>*>(p); });
  return nb::ndarray<nb::numpy, std::int64_t>(owned->data(), shape, owner);
}

BatchPlan make_plan(const Matrix<std::int64_t>& rows, const Vector<std::int64_t>& time_columns,
                    const Matrix<std::int64_t>& spatial_columns,
                    const Vector<std::int64_t>& step_offsets,
                    const std::vector<std::int64_t>& window) {
  BatchTemplate t;
  t.channels = rows.shape(0);
  t.columns = rows.shape(1);
  t.rows = values(rows);
  t.time_column = values(time_columns);
  t.spatial_columns = values(spatial_columns);
  t.step_offsets = values(step_offsets);
  t.window = window;
  return value_or_throw(BatchPlan::create(std::move(t)));
}

void bind_plan(nb::module_& m) {
  nb::class_<BatchPlan>(m, "BatchPlan",
                        "A loader's request tables: template rows per channel, their time and "
                        "spatial columns, the steps' time offsets, the window (batch_plan.h)")
      .def(
          "__init__",
          [](BatchPlan* self, const Matrix<std::int64_t>& rows, const Vector<std::int64_t>& time,
             const Matrix<std::int64_t>& spatial, const Vector<std::int64_t>& offsets,
             const std::vector<std::int64_t>& window) {
            new (self) BatchPlan(make_plan(rows, time, spatial, offsets, window));
          },
          "rows"_a, "time_columns"_a, "spatial_columns"_a, "step_offsets"_a, "window"_a)
      .def(
          "table",
          [](const BatchPlan& p, const Vector<std::int64_t>& times,
             const Matrix<std::int64_t>& origins) {
            const std::span<const std::int64_t> t(times.data(), times.size());
            const std::span<const std::int64_t> o(origins.data(), origins.size());
            return numpy_of(value_or_throw(p.table(t, o)), {p.rows(times.size()), p.columns()});
          },
          "times"_a, "origins"_a, "The request table of samples at `times` with `origins`.");
}

struct Balance {
  std::shared_ptr<DecodeBalance> balance;
};

void bind_balance(nb::module_& m) {
  nb::class_<Balance>(m, "DecodeBalance",
                      "The share of GPU-decodable chunks the host threads decode, steered by the "
                      "consumer's waits (pipeline/decode_balance.h)")
      .def(
          "__init__",
          [](Balance* self, double start, double step, int window, int max_patience,
             double tolerance, double wait_fraction, double min_wait_s) {
            const DecodeBalanceSettings s{start,     step,          window,    max_patience,
                                          tolerance, wait_fraction, min_wait_s};
            new (self) Balance{value_or_throw(DecodeBalance::create(s))};
          },
          "start"_a = 1.0, "step"_a = 0.125, "window"_a = 4, "max_patience"_a = 32,
          "tolerance"_a = 0.02, "wait_fraction"_a = 0.02, "min_wait_s"_a = 0.5e-3)
      .def("new_pass", [](Balance& b) { b.balance->new_pass(); })
      .def(
          "observe",
          [](Balance& b, double asked, double taken, long ready, std::optional<double> share,
             bool settled) { b.balance->observe(asked, taken, ready, share, settled); },
          "asked"_a, "taken"_a, "ready"_a, "share"_a = nb::none(), "settled"_a = true)
      .def_prop_ro("share", [](const Balance& b) { return b.balance->share(); })
      .def_prop_ro("to_gpu", [](const Balance& b) { return b.balance->state().to_gpu; })
      .def_prop_ro("to_host", [](const Balance& b) { return b.balance->state().to_host; })
      .def_prop_ro("patience", [](const Balance& b) { return b.balance->state().patience; })
      .def_prop_ro("max_patience",
                   [](const Balance& b) { return b.balance->settings().max_patience; });
}

// What the engine's batches are made of and how, as the Loader passes it.
struct EngineArgs {
  nb::list arrays;
  std::string dtype, device;
  int device_id = 0;
  int workers = 2, depth = 3;
  std::optional<MeanStd> normalize;
  std::optional<std::vector<CfTuple>> decode;
  bool missing_error = false;
  double host_share = 0.0;
  std::uint64_t read_budget = 0;  // gpu::DeviceReadOptions::read_budget
  nb::object balance, executor, decode_executor, cache, host_cache, shard_indexes, reader;
  std::string gpu_decode;
  bool high_priority = false;  // stream_priority "high" (DeviceBatchMaker)
};

// The engine and the Python objects whose C++ parts its makers use (executors, caches, the GPU
// reader), kept alive until the workers are joined (members go in reverse order).
struct Engine {
  std::vector<nb::object> keep;
  nb::object reader;
  std::unique_ptr<BatchEngine> engine;

  Engine() = default;
  Engine(const Engine&) = delete;
  ~Engine() { close(); }
  void close() {
    // Nothing to do once closed (at interpreter exit, the atexit hook closed it), nor in a
    // forked child, where the workers do not exist.
    if (engine == nullptr || !engine->open()) return;
    nb::gil_scoped_release unlocked;  // a worker may be running a codec written in Python
    engine->close();
  }
  BatchEngine& get() {
    if (engine == nullptr) throw std::runtime_error("the batch engine was closed");
    return *engine;
  }
};

BatchRecipe recipe_of(const BatchPlan& plan, const EngineArgs& a) {
  BatchRecipe r;
  r.plan = plan;
  for (nb::handle h : a.arrays) r.arrays.push_back(nb::cast<std::shared_ptr<Array>>(h));
  r.dtype = value_or_throw(parse_v3_data_type(a.dtype));
  if (a.normalize) {
    if (a.normalize->shape(1) != 2 || a.normalize->shape(0) != plan.channels())
      throw StatusError(
          invalid_argument("batch engine: normalize needs one (mean, std) row per "
                           "channel"));
    r.mean_std.emplace(a.normalize->data(), a.normalize->data() + a.normalize->size());
  }
  r.decoding = cf_decoding(a.decode);
  r.missing_is_error = a.missing_error;
  return r;
}

template <typename T>
T* pointer_of(const nb::object& h) {
  return h.is_none() ? nullptr : nb::cast<T*>(h);
}

std::shared_ptr<BatchMaker> maker_of(BatchRecipe recipe, const EngineArgs& a) {
  ReadOptions host = read_options(pointer_of<Executor>(a.executor));
  host.shard_indexes = pointer_of<ShardIndexCache>(a.shard_indexes);
  // Batches alive at once: `depth` started and not yet taken, and the one the consumer holds
  // (the Loader's depth is prefetch + workers - 1).
  if (a.device == "cpu")
    return std::make_shared<HostBatchMaker>(std::move(recipe), host, std::size_t(a.depth + 1));
#ifdef ZARRFLOW_HAVE_CUDA
  GpuReader& reader = reader_of(a.reader);
  gpu::DeviceReadOptions opts;
  opts.pool = host.pool;
  opts.buffers = host.buffers;
  opts.shard_indexes = host.shard_indexes;
  opts.decode = parse_decode(a.gpu_decode);
  opts.cache = cache_of(a.cache, reader);
  opts.host_cache = cache_of(a.host_cache, reader);
  opts.read_budget = a.read_budget;
  if (auto* decode = pointer_of<Executor>(a.decode_executor)) opts.decode_pool = &decode->pool;
  gpu::DeviceBatchSettings settings;
  settings.device = a.device_id;
  settings.workers = a.workers;
  settings.watch_pools = !a.balance.is_none();
  settings.high_priority = a.high_priority;
  return std::make_shared<gpu::DeviceBatchMaker>(std::move(recipe), shared_reader(reader.state),
                                                 opts, settings);
#else
  throw StatusError(unimplemented("zarrflow was built without CUDA"));
#endif
}

void make_engine(Engine* self, const BatchPlan& plan, const EngineArgs& a) {
  BatchEngineOptions options;
  options.workers = a.workers;
  options.depth = a.depth;
  options.host_share = a.host_share;
  if (!a.balance.is_none()) options.balance = nb::cast<Balance&>(a.balance).balance;
  auto engine = value_or_throw(BatchEngine::create(maker_of(recipe_of(plan, a), a), options));
  auto* e = new (self) Engine();  // nothing throws from here on
  e->keep = {a.executor, a.decode_executor, a.cache, a.host_cache, a.shard_indexes};
  e->reader = a.reader;
  e->engine = std::move(engine);
}

// The jobs of a pass: `sizes` batches over the samples, in order.
std::vector<BatchJob> jobs_of(const Vector<std::int64_t>& samples,
                              const Vector<std::int64_t>& times,
                              const Matrix<std::int64_t>& origins,
                              const std::vector<std::size_t>& sizes) {
  const std::size_t n = samples.size(), s = origins.shape(1);
  std::size_t total = 0;
  for (std::size_t b : sizes) total += b;
  if (times.size() != n || origins.shape(0) != n || total != n)
    throw StatusError(
        invalid_argument("batch engine: a pass needs a time and an origin per "
                         "sample, and batch sizes that add up to the samples"));
  std::vector<BatchJob> jobs(sizes.size());
  std::size_t at = 0;
  for (std::size_t j = 0; j < sizes.size(); ++j) {
    const std::size_t end = at + sizes[j];
    jobs[j].samples.assign(samples.data() + at, samples.data() + end);
    jobs[j].times.assign(times.data() + at, times.data() + end);
    jobs[j].origins.assign(origins.data() + at * s, origins.data() + end * s);
    at = end;
  }
  return jobs;
}

py::Tensor tensor_of(MadeBatch& b, const Engine& e) {
  if (b.device < 0)
    return py::Tensor{tensor_state(b.dtype, b.shape, b.data, std::move(b.memory), 1, 0)};
#ifdef ZARRFLOW_HAVE_CUDA
  auto& reader = nb::cast<GpuReader&>(e.reader);
  return pooled_device_tensor(b.dtype, b.shape, b.data, std::move(b.memory),
                              shared_reader(reader.state), b.device);
#else
  (void)e;
  throw StatusError(unimplemented("zarrflow was built without CUDA"));
#endif
}

// (tensor, report, timing, all_started) of the pass's next batch; None after its last.
nb::object take(Engine& e, BatchEngine::PassId pass) {
  BatchEngine& engine = e.get();
  Result<BatchEngine::Taken> got = [&] {
    nb::gil_scoped_release unlocked;
    return engine.take(pass);
  }();
  BatchEngine::Taken t = value_or_throw(std::move(got));
  if (t.outcome == BatchEngine::Outcome::kPassEnded) return nb::none();
  if (t.outcome == BatchEngine::Outcome::kClosed)
    throw std::runtime_error("this pass was dropped, or its batch engine closed");
  TakenBatch& b = t.batch;
  nb::tuple timing = nb::make_tuple(b.worker, b.start, b.batch.read_end, b.end, b.asked, b.taken,
                                    b.ready, b.share, b.batch.pools_grew, b.judged);
  nb::dict report = report_dict(b.batch.report);
  return nb::make_tuple(tensor_of(b.batch, e), report, timing, b.all_started);
}

void bind_batch_engine(nb::module_& m) {
  nb::class_<Engine>(m, "BatchEngine",
                     "A loader's worker threads: passes of batches made ahead, handed out in "
                     "order (pipeline/batch_engine.h)",
                     nb::is_weak_referenceable())
      .def(
          "__init__",
          [](Engine* self, const BatchPlan& plan, nb::list arrays, std::string dtype,
             std::string device, int device_id, int workers, int depth,
             std::optional<MeanStd> normalize, std::optional<std::vector<CfTuple>> decode,
             bool missing_error, double host_share, nb::object balance, nb::object executor,
             nb::object decode_executor, nb::object cache, nb::object host_cache,
             nb::object shard_indexes, nb::object reader, std::string gpu_decode,
             std::uint64_t read_budget, std::string stream_priority) {
            if (stream_priority != "normal" && stream_priority != "high")
              throw StatusError(
                  invalid_argument("batch engine: stream_priority must be "
                                   "'normal' or 'high', got '" +
                                   stream_priority + "'"));
            EngineArgs a;
            a.arrays = std::move(arrays);
            a.dtype = std::move(dtype);
            a.device = std::move(device);
            a.device_id = device_id;
            a.workers = workers;
            a.depth = depth;
            a.normalize = std::move(normalize);
            a.decode = std::move(decode);
            a.missing_error = missing_error;
            a.host_share = host_share;
            a.balance = std::move(balance);
            a.executor = std::move(executor);
            a.decode_executor = std::move(decode_executor);
            a.cache = std::move(cache);
            a.host_cache = std::move(host_cache);
            a.shard_indexes = std::move(shard_indexes);
            a.reader = std::move(reader);
            a.gpu_decode = std::move(gpu_decode);
            a.read_budget = read_budget;
            a.high_priority = stream_priority == "high";
            make_engine(self, plan, a);
          },
          "plan"_a, "arrays"_a, "dtype"_a, "device"_a, "device_id"_a = 0, "workers"_a = 2,
          "depth"_a = 3, "normalize"_a = nb::none(), "decode"_a = nb::none(),
          "missing_error"_a = false, "host_share"_a = 0.0, "balance"_a = nb::none(),
          "executor"_a = nb::none(), "decode_executor"_a = nb::none(), "cache"_a = nb::none(),
          "host_cache"_a = nb::none(), "shard_indexes"_a = nb::none(), "reader"_a = nb::none(),
          "gpu_decode"_a = "auto", "read_budget"_a = 0, "stream_priority"_a = "normal")
      .def(
          "submit",
          [](Engine& e, const Vector<std::int64_t>& samples, const Vector<std::int64_t>& times,
             const Matrix<std::int64_t>& origins, const std::vector<std::size_t>& sizes,
             bool read_ahead) {
            return e.get().submit(jobs_of(samples, times, origins, sizes), read_ahead);
          },
          "samples"_a, "times"_a, "origins"_a, "sizes"_a, "read_ahead"_a = false,
          "Queues a pass: `sizes` batches over the samples, in order; returns its id.")
      .def("take", &take, "pass_id"_a,
           "The pass's next batch (tensor, report, timing, all_started), None after its last.")
      .def(
          "drop", [](Engine& e, BatchEngine::PassId p) { e.get().drop(p); }, "pass_id"_a)
      .def(
          "counts",
          [](Engine& e, BatchEngine::PassId p) {
            const auto c = e.get().counts(p);
            nb::dict d;
            d["size"] = c.size;
            d["started"] = c.started;
            d["ready"] = c.ready;
            d["taken"] = c.taken;
            return d;
          },
          "pass_id"_a)
      .def_prop_ro("in_flight", [](Engine& e) { return e.get().in_flight(); })
      .def_prop_ro("producing", [](Engine& e) { return e.get().producing(); })
      .def_prop_ro("workers", [](Engine& e) { return e.get().workers(); })
      .def_prop_ro("live_workers", [](Engine& e) { return e.get().live_workers(); })
      .def("close", &Engine::close, "Stops the workers (each finishes its batch) and joins them.");
  m.def("engine_clock", &BatchEngine::clock,
        "Seconds of the clock the batch engine's times use (monotonic).");
}

}  // namespace

void bind_engine(nb::module_& m) {
  bind_plan(m);
  bind_balance(m);
  bind_batch_engine(m);
}

}  // namespace zarrflow::py
