// What a family's hook list generates. Each family whose SIMD backends replace kernels through a
// table (mlkem, mldsa) writes every hook once, in <family>/hooks.def, one line per hook:
//
//   PQCD_HOOK(hook, Kernel, Ret, Params)                  the table member `hook`, of type
//                                                         Ret (*) Params, whose kernels are
//                                                         named Kernel in every backend namespace
//   PQCD_FORWARDED_HOOK(hook, Kernel, Ret, Params, Args)  the same, and the algorithm code calls
//                                                         <family>::Kernel(Args), which forwards
//                                                         to the active table
//
// A user defines the macro(s) it needs with one of the generators below, then includes the list
// (which #undefs both at its end): an undefined PQCD_FORWARDED_HOOK means PQCD_HOOK, an undefined
// PQCD_HOOK means nothing. From the one list come:
//
//   <family>::Hook                  an enumerator per hook (PQCD_HOOK_ENUMERATOR), and HookSet
//   <family>::portable::Kernel      the portable kernels' declarations (PQCD_HOOK_DECLARATION)
//   <family>::Backend               one member per hook, the portable kernel by default
//                                   (PQCD_HOOK_MEMBER)
//   <family>::Kernel                the forwarders' declarations (poly.h) and definitions
//                                   (backend.cc, PQCD_HOOK_FORWARDER)
//   <family>::<isa>::Kernel         every backend's kernel declarations, and its table builder
//                                   WithKernels (<family>/isa_kernels.inc, PQCD_HOOK_OVERRIDE)
//   the start-up check              backend_check.cc runs, for each hook of the list a table sets,
//                                   the check of that hook (a switch over Hook, -Wswitch an error)
//
// Declarations, constants, consteval functions and macros only (included by ISA-flagged
// translation units).
#pragma once

#include <cstdint>

namespace pqcd::kernels {

// A set of one family's hooks (Hook: the enum generated from its list, kCount last). A structural
// literal type, usable as a template argument; its functions are consteval, so that nothing of it
// is ever emitted as code (this header is included by ISA-flagged translation units).
template <class Hook>
struct HookSet {
  static constexpr unsigned kCount = static_cast<unsigned>(Hook::kCount);
  static_assert(kCount <= 64, "a HookSet holds up to 64 hooks");

  uint64_t bits = 0;

  static consteval uint64_t Bit(Hook h) { return uint64_t{1} << static_cast<unsigned>(h); }
  static consteval HookSet All() {
    return {kCount == 64 ? ~uint64_t{0} : (uint64_t{1} << kCount) - 1};
  }
  template <class... Hooks>
  static consteval HookSet Of(Hooks... hooks) {
    return {(uint64_t{0} | ... | Bit(hooks))};
  }
  template <class... Hooks>
  consteval HookSet Without(Hooks... hooks) const {
    return {bits & ~Of(hooks...).bits};
  }
  consteval bool Has(Hook h) const { return (bits & Bit(h)) != 0; }
};

}  // namespace pqcd::kernels

// ---- Generators (the macro a user defines PQCD_HOOK or PQCD_FORWARDED_HOOK as) ----

// `hook,` (inside an enum).
#define PQCD_HOOK_ENUMERATOR(hook, Kernel, Ret, Params) hook,
// `Ret Kernel Params;` in the current namespace (portable::, a backend's namespace, the
// forwarders' declarations).
#define PQCD_HOOK_DECLARATION(hook, Kernel, Ret, Params) Ret Kernel Params;
// The table member, defaulting to the portable kernel (inside the family's Backend).
#define PQCD_HOOK_MEMBER(hook, Kernel, Ret, Params) Ret(*hook) Params = &portable::Kernel;
// The forwarder's definition: the same signature, one call through ActiveBackend() (defined in the
// family's backend.cc, out of line as before the list existed: one direct call to the forwarder,
// one indirect call to the kernel). `return` of a void call is valid C++.
#define PQCD_HOOK_FORWARDER(hook, Kernel, Ret, Params, Args) \
  Ret Kernel Params {                                        \
    return ActiveBackend().hook Args;                        \
  }
// Inside a backend's WithKernels(table) (<family>/isa_kernels.inc): the hook is set to this
// namespace's kernel when the backend's kKernels holds it. A kernel outside kKernels is named only
// in a discarded statement, so it need not be defined ([basic.def.odr]).
#define PQCD_HOOK_OVERRIDE(hook, Kernel, Ret, Params) \
  if constexpr (kKernels.Has(Hook::hook)) table.hook = &Kernel;
