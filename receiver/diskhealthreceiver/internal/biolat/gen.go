package biolat

// The BPF objects and their Go bindings are generated and committed, so that building and testing need
// no clang: biolat (per device, the default) and cglat (per owning cgroup, opt-in, an object of its own
// so that the per-device path does not change when it is off). `make bpf` regenerates them with
// Debian's clang-14, and TestObjectMatchesSources fails when they drift from bpf/. bpf2go's fixed flags
// (-fno-ident, -fdebug-prefix-map, llvm-strip -g) make the output byte-reproducible. One little-endian
// object serves every little-endian architecture.
//go:generate go tool -modfile=../../../../internal/tools/go.mod bpf2go -cc clang-14 -strip llvm-strip-14 -target bpfel -tags linux -no-global-types -go-package biolat biolat bpf/biolat.bpf.c -- -Wall -Werror
//go:generate go tool -modfile=../../../../internal/tools/go.mod bpf2go -cc clang-14 -strip llvm-strip-14 -target bpfel -tags linux -no-global-types -go-package biolat cglat bpf/cglat.bpf.c -- -Wall -Werror
//go:generate sh -c "sha256sum bpf/biolat.bpf.c bpf/cglat.bpf.c bpf/hist.h bpf/slots.h bpf/kernel.h bpf/cgroup.h bpf/types.h > bpf/sources.sha256"
