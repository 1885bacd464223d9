// The PyTorch bridge's reporting path: each ATen op reported from PyTorch's RecordFunction
// callbacks (what Kineto uses), in C++, with no Python on the op's path. aclprof.torch
// compiles this against the installed torch at first use and caches the result
// (docs/design.md, "The PyTorch bridge").
//
// The callbacks are registered once, disabled. They are enabled only while someone listens
// (aclprofExtListen tells us, also in the middle of a block) and some thread is inside a
// profile block, so that with nobody listening PyTorch runs its own fast path.
//
// Which ops: those the Python dispatch mode sees, so both paths name the same ops. An op
// with a CompositeImplicitAutograd kernel decomposes into others before it reaches the
// kernels and is not reported itself; of the rest, only the outermost on the thread is (what
// an op calls inside its kernel is part of it).

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/core/ScalarType.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct OpMeta {
  const char *in_shapes, *in_types, *in_formats, *out_shapes, *out_types, *out_formats;
  uint64_t flops, bytes;
};
using ReportOp = int (*)(uint32_t, const char*, const char*, uint64_t, uint64_t);
using ReportOpMeta = int (*)(uint32_t, const char*, const char*, uint64_t, uint64_t, uint32_t);
using MetaCreate = int (*)(const OpMeta*, uint32_t*);
using OpRegister = int (*)(const char*, size_t, const char*, size_t, uint32_t, uint32_t*);
using ReportRegistered = int (*)(uint32_t, uint32_t, uint64_t, uint64_t);
using ListenFn = void (*)(int, void*);
using Listen = int (*)(ListenFn, void*);

ReportOp report_op;
ReportOpMeta report_op_meta;
MetaCreate meta_create;
OpRegister op_register;
ReportRegistered report_registered;

// Bounds on the per-thread caches: names and shapes that never repeat must not grow memory.
constexpr size_t kMaxCached = 65536;

struct Profile {
  uint64_t serial;
  uint32_t model;
  std::string root;
  bool shapes;
  // profile_memory: the device its memory is reported on (-1: not reported).
  int32_t memory_device = -1;
  std::atomic<uint64_t> ok{0}, failed{0};
};

// One profile block entered on this thread (blocks nest).
struct Block {
  Profile* profile;
  Block* outer;
  // Whether entering it installed the memory reporter (popped on exit).
  bool memory = false;
};

// aclprofExtMemReport's event and the function itself.
struct MemEvent {
  uint32_t deviceId, pool;
  uint64_t addr;
  int64_t size;
  const char* owner;
  uint64_t totalAllocated, totalReserved, timeNs;
};
using MemReport = int (*)(const MemEvent*);
MemReport mem_report = nullptr;

thread_local Block* current = nullptr;
// Module paths, innermost last (pushed by the module hooks).
thread_local std::vector<const std::string*> scopes;
// Reported ops under way on this thread: only the outermost is reported.
thread_local int depth = 0;

std::mutex state_mu;
bool listening = false;
int blocks[2] = {0, 0};  // threads inside blocks without [0] and with [1] shapes
bool enabled[2] = {false, false};
at::CallbackHandle handles[2] = {0, 0};
std::atomic<uint64_t> next_serial{1};

// Under state_mu: each callback runs while someone listens and a block of its kind is open.
void update_enabled() {
  for (int k = 0; k < 2; k++) {
    bool want = listening && blocks[k] > 0;
    if (want != enabled[k]) {
      if (want)
        at::reenableCallback(handles[k]);
      else
        at::disableCallback(handles[k]);
      enabled[k] = want;
    }
  }
}

void on_listening(int on, void*) {
  std::lock_guard<std::mutex> g(state_mu);
  listening = on != 0;
  update_enabled();
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// Whether the op named `name` reaches the kernels itself (cached per name).
bool reported_kind(const at::RecordFunction& fn) {
  thread_local std::unordered_map<const char*, bool> known;
  const char* name = fn.name();
  auto it = known.find(name);
  if (it != known.end()) return it->second;
  bool yes = false;
  if (auto on = fn.operator_name()) {
    auto op = c10::Dispatcher::singleton().findOp(*on);
    yes = !(op && op->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd));
  }
  if (known.size() < kMaxCached) known.emplace(name, yes);
  return yes;
}

// CANN's data type names, as op_summary writes them (the Python path's table).
std::string cann_type(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return "FLOAT";
    case c10::ScalarType::Half: return "FLOAT16";
    case c10::ScalarType::BFloat16: return "DT_BF16";
    case c10::ScalarType::Double: return "DOUBLE";
    case c10::ScalarType::Long: return "INT64";
    case c10::ScalarType::Int: return "INT32";
    case c10::ScalarType::Short: return "INT16";
    case c10::ScalarType::Char: return "INT8";
    case c10::ScalarType::Byte: return "UINT8";
    case c10::ScalarType::Bool: return "BOOL";
    case c10::ScalarType::ComplexFloat: return "COMPLEX64";
    default: {
      std::string s = c10::toString(t);
      for (auto& c : s) c = char(toupper(static_cast<unsigned char>(c)));
      return s;
    }
  }
}

// The defined tensors among IValues (also inside tensor lists, as aten::cat's).
std::vector<at::Tensor> tensors_of(c10::ArrayRef<const c10::IValue> values) {
  std::vector<at::Tensor> out;
  for (const auto& v : values) {
    if (v.isTensor()) {
      if (v.toTensor().defined()) out.push_back(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector())
        if (t.defined()) out.push_back(t);
    }
  }
  return out;
}

struct Text {
  std::string shapes, types;
  uint64_t bytes = 0;
};

Text describe(const std::vector<at::Tensor>& ts) {
  Text d;
  for (size_t i = 0; i < ts.size(); i++) {
    if (i) {
      d.shapes += ';';
      d.types += ';';
    }
    auto sizes = ts[i].sizes();
    for (size_t k = 0; k < sizes.size(); k++) {
      if (k) d.shapes += ',';
      d.shapes += std::to_string(sizes[k]);
    }
    d.types += cann_type(ts[i].scalar_type());
    d.bytes += uint64_t(ts[i].numel()) * ts[i].element_size();
  }
  return d;
}

// FLOPs of matrix products and convolutions, per output element (2 per multiply-add);
// 0 where unknown. The Python path's rule.
uint64_t flops_per_output(const std::string& op, const std::vector<at::Tensor>& ins) {
  if (op == "aten::mm" || op == "aten::bmm" || op == "aten::addmm" || op == "aten::matmul" ||
      op == "aten::linear") {
    size_t a = op == "aten::addmm" ? 1 : 0;
    if (ins.size() > a + 1 && ins[a].dim() > 0) return 2 * uint64_t(ins[a].size(-1));
  } else if (op == "aten::convolution" || op == "aten::_convolution" || op == "aten::conv2d" ||
             op == "aten::conv1d") {
    if (ins.size() > 1 && ins[1].dim() > 0 && ins[1].size(0) > 0)
      return 2 * uint64_t(ins[1].numel() / ins[1].size(0));
  }
  return 0;
}

struct Ctx : at::ObserverContext {
  uint64_t start = 0;
  uint32_t meta = 0;
  // Shapes not seen before on this thread: what the end needs to register them.
  std::unique_ptr<Text> in;
  std::string key;
  uint64_t flops_per_out = 0;
};

thread_local std::unordered_map<std::string, uint32_t> metas;

void key_of(std::string& key, const char* name, const std::vector<at::Tensor>& ins) {
  key.assign(name);
  key += '\0';
  for (const auto& t : ins) {
    auto sizes = t.sizes();
    int64_t head[2] = {int64_t(t.scalar_type()), int64_t(sizes.size())};
    key.append(reinterpret_cast<const char*>(head), sizeof head);
    key.append(reinterpret_cast<const char*>(sizes.data()), sizes.size() * sizeof(int64_t));
  }
}

// The op that owns what the allocator reports now on this thread (profile_memory): its
// module path and operator, as its op is named.
thread_local std::string mem_owner;

// PyTorch's allocators report to the PROFILER_STATE debug info of the allocating thread
// (what Kineto installs for profile_memory): this one passes each allocation and release to
// aclprof, owned by the op running then.
struct MemReporter final : c10::MemoryReportingInfoBase {
  uint32_t device;
  explicit MemReporter(uint32_t d) : device(d) {}
  bool memoryProfilingEnabled() const override { return true; }
  void reportMemoryUsage(void* ptr, int64_t alloc_size, size_t total_allocated,
                         size_t total_reserved, c10::Device dev) override {
    if (mem_report == nullptr || alloc_size == 0) return;
    Block* b = current;
    const char* owner = depth > 0 ? mem_owner.c_str() : (b ? b->profile->root.c_str() : "");
    // The CPU allocator reports nothing reserved: what it holds is what it allocated.
    uint64_t reserved = std::max<uint64_t>(total_reserved, total_allocated);
    MemEvent ev{dev.index() >= 0 ? uint32_t(dev.index()) : device, 0,
                uint64_t(reinterpret_cast<uintptr_t>(ptr)), alloc_size, owner,
                uint64_t(total_allocated), reserved, 0};
    mem_report(&ev);
  }
};

template <bool Shapes>
std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  Block* b = current;
  if (b == nullptr || b->profile->shapes != Shapes || depth > 0 || !reported_kind(fn))
    return nullptr;
  depth++;
  if (b->profile->memory_device >= 0) {
    mem_owner.assign(scopes.empty() ? b->profile->root : *scopes.back());
    mem_owner += '/';
    mem_owner += fn.name();
  }
  auto ctx = std::make_unique<Ctx>();
  if (Shapes) {
    auto ins = tensors_of(fn.inputs());
    thread_local std::string key;
    key_of(key, fn.name(), ins);
    auto it = metas.find(key);
    if (it != metas.end()) {
      ctx->meta = it->second;
    } else {
      ctx->in = std::make_unique<Text>(describe(ins));
      ctx->key = key;
      ctx->flops_per_out = flops_per_output(fn.name(), ins);
    }
  }
  ctx->start = now_ns();
  return ctx;
}

// The op names of one (profile, module path, operator): a profile's root path is its own
// string, freed with it, so the profile's serial keeps a later profile at the same address
// from finding them.
struct NameKey {
  uint64_t serial;
  const std::string* where;
  const char* op;
  bool operator==(const NameKey&) const = default;
};

struct NameKeyHash {
  size_t operator()(const NameKey& k) const {
    return std::hash<uint64_t>()(k.serial * 0x9E3779B97F4A7C15ull ^
                                 reinterpret_cast<uintptr_t>(k.where) * 31 ^
                                 reinterpret_cast<uintptr_t>(k.op));
  }
};

// An op's names, and its ids as a registered op (aclprofExtOpRegister, on first sight):
// without metadata, and for each of the first kMaxMetas metadata ids it was seen with. A
// failed registration (the table full) is kept as id 0, so it is not tried again: those ops
// are reported by name.
constexpr size_t kMaxMetas = 16;
struct Names {
  std::string name, type;
  bool tried = false;
  uint32_t id = 0;
  std::vector<std::pair<uint32_t, uint32_t>> by_meta;

  uint32_t registered(uint32_t meta) {
    if (meta == 0) {
      if (!tried) {
        tried = true;
        if (op_register(name.data(), name.size(), type.data(), type.size(), 0, &id) != 0) id = 0;
      }
      return id;
    }
    for (const auto& [m, i] : by_meta)
      if (m == meta) return i;
    if (by_meta.size() >= kMaxMetas) return 0;
    uint32_t i = 0;
    if (op_register(name.data(), name.size(), type.data(), type.size(), meta, &i) != 0) i = 0;
    by_meta.emplace_back(meta, i);
    return i;
  }
};

template <bool Shapes>
void on_end(const at::RecordFunction& fn, at::ObserverContext* octx) {
  if (octx == nullptr) return;
  uint64_t end = now_ns();
  depth--;
  auto* ctx = static_cast<Ctx*>(octx);
  Block* b = current;
  if (b == nullptr) return;  // the block ended inside the op
  Profile* p = b->profile;
  thread_local std::unordered_map<NameKey, Names, NameKeyHash> names;
  const std::string* where = scopes.empty() ? &p->root : scopes.back();
  const char* op = fn.name();
  NameKey key{p->serial, where, op};
  auto it = names.find(key);
  if (it == names.end()) {
    if (names.size() >= kMaxCached) names.clear();
    it = names.emplace(key, Names{*where + "/" + op, op}).first;
  }
  int rc;
  if (Shapes) {
    if (ctx->in) {
      const auto& ov = fn.outputs();
      auto outs = tensors_of(c10::ArrayRef<const c10::IValue>(ov.data(), ov.size()));
      Text out = describe(outs);
      uint64_t out_elems = outs.empty() ? 0 : uint64_t(outs[0].numel());
      OpMeta m{ctx->in->shapes.c_str(), ctx->in->types.c_str(), "", out.shapes.c_str(),
               out.types.c_str(), "", ctx->flops_per_out * out_elems,
               ctx->in->bytes + out.bytes};
      uint32_t id = 0;
      if (meta_create(&m, &id) == 0) {
        ctx->meta = id;
        if (metas.size() < kMaxCached) metas.emplace(std::move(ctx->key), id);
      }
    }
  }
  uint32_t id = it->second.registered(Shapes ? ctx->meta : 0);
  if (id != 0) {
    rc = report_registered(p->model, id, ctx->start, end);
  } else if (Shapes) {
    rc = report_op_meta(p->model, it->second.name.c_str(), it->second.type.c_str(), ctx->start,
                        end, ctx->meta);
  } else {
    rc = report_op(p->model, it->second.name.c_str(), it->second.type.c_str(), ctx->start, end);
  }
  (rc == 0 ? p->ok : p->failed).fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

extern "C" {

// Registers the callbacks (disabled) and listens; the functions are the library's.
int aclprof_torch_init(void* report, void* report_meta, void* create, void* listen,
                       void* op_reg, void* report_reg) {
  std::unique_lock<std::mutex> g(state_mu);
  if (handles[0] != 0) return 0;
  report_op = reinterpret_cast<ReportOp>(report);
  report_op_meta = reinterpret_cast<ReportOpMeta>(report_meta);
  meta_create = reinterpret_cast<MetaCreate>(create);
  op_register = reinterpret_cast<OpRegister>(op_reg);
  report_registered = reinterpret_cast<ReportRegistered>(report_reg);
  handles[0] = at::addGlobalCallback(
      at::RecordFunctionCallback(on_start<false>, on_end<false>)
          .scopes({at::RecordScope::FUNCTION}));
  handles[1] = at::addGlobalCallback(
      at::RecordFunctionCallback(on_start<true>, on_end<true>)
          .needsInputs(true)
          .needsOutputs(true)
          .scopes({at::RecordScope::FUNCTION}));
  at::disableCallback(handles[0]);
  at::disableCallback(handles[1]);
  g.unlock();  // the listener is called at once, and takes the lock
  return reinterpret_cast<Listen>(listen)(on_listening, nullptr);
}

void* aclprof_torch_profile_new(uint32_t model, const char* root, int shapes) {
  auto* p = new Profile;
  p->serial = next_serial.fetch_add(1);
  p->model = model;
  p->root = root;
  p->shapes = shapes != 0;
  return p;
}

void aclprof_torch_profile_free(void* p) { delete static_cast<Profile*>(p); }

void aclprof_torch_counts(void* p, uint64_t* ok, uint64_t* failed) {
  *ok = static_cast<Profile*>(p)->ok.load();
  *failed = static_cast<Profile*>(p)->failed.load();
}

// profile_memory: the allocator's events go to aclprof's `report` (aclprofExtMemReport) on
// `device` while this profile's blocks are entered.
void aclprof_torch_memory(void* p, void* report, int32_t device) {
  mem_report = reinterpret_cast<MemReport>(report);
  static_cast<Profile*>(p)->memory_device = device;
}

void aclprof_torch_enter(void* p) {
  auto* prof = static_cast<Profile*>(p);
  current = new Block{prof, current};
  // Installed only where no profiler (Kineto) reports this thread's memory already.
  if (prof->memory_device >= 0 &&
      c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) == nullptr) {
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE,
                                     std::make_shared<MemReporter>(uint32_t(prof->memory_device)));
    current->memory = true;
  }
  std::lock_guard<std::mutex> g(state_mu);
  blocks[prof->shapes]++;
  update_enabled();
}

void aclprof_torch_exit(void) {
  Block* b = current;
  if (b == nullptr) return;
  if (b->memory) c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
  current = b->outer;
  std::lock_guard<std::mutex> g(state_mu);
  blocks[b->profile->shapes]--;
  update_enabled();
  delete b;
}

// A module path, kept for the process's life (one per module of a profiled network).
void* aclprof_torch_scope(const char* path) { return new std::string(path); }

void aclprof_torch_push(void* scope) { scopes.push_back(static_cast<const std::string*>(scope)); }

void aclprof_torch_pop(void) {
  if (!scopes.empty()) scopes.pop_back();
}

void aclprof_torch_clear(void) { scopes.clear(); }

// Which callbacks run now (bit 0: without shapes, bit 1: with), for tests.
int aclprof_torch_enabled(void) {
  std::lock_guard<std::mutex> g(state_mu);
  return int(enabled[0]) | int(enabled[1]) << 1;
}

}  // extern "C"
