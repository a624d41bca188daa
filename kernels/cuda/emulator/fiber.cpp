// Fibers for the CUDA emulator: a hand-written x86-64 stack switch and mmap'ed stacks.
#include "ember/kernels/cuda/emulator/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <new>

#if defined(EMBER_EMU_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__)
#error "ember's CUDA emulator switches fibers with x86-64 assembly; port ember_emu_switch first"
#endif

// ember_emu_switch(save, load): pushes the callee-saved registers (System V: rbx, rbp, r12-r15)
// and the SSE/x87 control words, stores the stack pointer into *save, loads `load` and pops the
// same frame from there. A new fiber's stack is prepared (Fiber::reset) so that the first switch
// to it "returns" into ember_emu_fiber_start with the entry function in r13 and its argument in r12.
extern "C" void ember_emu_switch(void** save, void* load);
extern "C" void ember_emu_fiber_start();
asm(R"(
  .text
  .globl ember_emu_switch
  .type ember_emu_switch, @function
ember_emu_switch:
  .cfi_startproc
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size ember_emu_switch, .-ember_emu_switch

  .globl ember_emu_fiber_start
  .type ember_emu_fiber_start, @function
ember_emu_fiber_start:
  .cfi_startproc
  .cfi_undefined rip
  movq %r12, %rdi
  callq *%r13
  ud2
  .cfi_endproc
  .size ember_emu_fiber_start, .-ember_emu_fiber_start
)");

namespace ember::emu {

namespace {

size_t page_size() {
  static const size_t bytes = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return bytes;
}

// The frame ember_emu_switch pops, lowest address first.
struct SwitchFrame {
  uint32_t mxcsr;
  uint32_t x87_control;
  uint64_t r15, r14, r13, r12, rbx, rbp;
  void (*return_address)();
};
static_assert(sizeof(SwitchFrame) == 64, "the frame ember_emu_switch pushes and pops");

}  // namespace

// The fiber's first frame: finish AddressSanitizer's switch, run the entry, leave for good.
struct FiberAccess {
  static void start(void* raw) {
    auto* fiber = static_cast<Fiber*>(raw);
#if defined(EMBER_EMU_ASAN)
    __sanitizer_finish_switch_fiber(nullptr, &fiber->host_stack_bottom_, &fiber->host_stack_size_);
#endif
    fiber->entry_(fiber->arg_);
    fiber->finish();
  }
};

Fiber::Fiber(size_t stack_bytes) {
  const size_t page = page_size();
  mapping_bytes_ = (stack_bytes + page - 1) / page * page + page;
  stack_ = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                -1, 0);
  if (stack_ == MAP_FAILED) throw std::bad_alloc();
  mprotect(stack_, page, PROT_NONE);  // a stack overflow faults instead of overwriting memory
}

Fiber::~Fiber() { munmap(stack_, mapping_bytes_); }

void Fiber::reset(void (*entry)(void*), void* arg) {
  char* bottom = static_cast<char*>(stack_) + page_size();
  char* top = static_cast<char*>(stack_) + mapping_bytes_;
#if defined(EMBER_EMU_ASAN)
  // A fiber abandoned mid-kernel (after a fault) leaves its frames' redzones poisoned.
  __asan_unpoison_memory_region(bottom, static_cast<size_t>(top - bottom));
#else
  (void)bottom;
#endif
  entry_ = entry;
  arg_ = arg;
  // After the pops, ember_emu_fiber_start runs with rsp = top - 16: 16-byte aligned for its call.
  auto* frame = reinterpret_cast<SwitchFrame*>(top - 16 - sizeof(SwitchFrame));
  uint32_t mxcsr = 0;
  uint16_t x87 = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(x87));
  *frame = SwitchFrame{mxcsr, x87, 0, 0, reinterpret_cast<uint64_t>(&FiberAccess::start),
                       reinterpret_cast<uint64_t>(this), 0, 0, &ember_emu_fiber_start};
  sp_ = frame;
  fake_stack_ = nullptr;
}

void Fiber::resume() {
#if defined(EMBER_EMU_ASAN)
  void* host_fake_stack = nullptr;
  char* bottom = static_cast<char*>(stack_) + page_size();
  __sanitizer_start_switch_fiber(&host_fake_stack, bottom, mapping_bytes_ - page_size());
#endif
  ember_emu_switch(&host_sp_, sp_);
#if defined(EMBER_EMU_ASAN)
  __sanitizer_finish_switch_fiber(host_fake_stack, nullptr, nullptr);
#endif
}

void Fiber::suspend() {
#if defined(EMBER_EMU_ASAN)
  __sanitizer_start_switch_fiber(&fake_stack_, host_stack_bottom_, host_stack_size_);
#endif
  ember_emu_switch(&sp_, host_sp_);
#if defined(EMBER_EMU_ASAN)
  __sanitizer_finish_switch_fiber(fake_stack_, &host_stack_bottom_, &host_stack_size_);
#endif
}

void Fiber::finish() {
#if defined(EMBER_EMU_ASAN)
  __sanitizer_start_switch_fiber(nullptr, host_stack_bottom_, host_stack_size_);  // this stack is done
#endif
  ember_emu_switch(&sp_, host_sp_);
  __builtin_unreachable();  // nobody resumes a finished fiber before reset()
}

}  // namespace ember::emu
