package filelat

// The BPF object and its Go bindings are generated and committed, so that building and testing need
// no clang (as biolat's). `make bpf` regenerates them with Debian's clang-14 and
// TestObjectMatchesSources fails when they drift from bpf/ and biolat's shared slots.h.
//go:generate go tool -modfile=../../../../internal/tools/go.mod bpf2go -cc clang-14 -strip llvm-strip-14 -target bpfel -tags linux -no-global-types -go-package filelat filelat bpf/filelat.bpf.c -- -Wall -Werror
//go:generate sh -c "sha256sum bpf/filelat.bpf.c bpf/vfs.h ../biolat/bpf/slots.h ../biolat/bpf/types.h ../biolat/bpf/cgroup.h > bpf/sources.sha256"
