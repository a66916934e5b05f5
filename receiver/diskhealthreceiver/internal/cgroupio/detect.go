package cgroupio

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

// Hierarchy says where a host's per-cgroup I/O statistics are.
type Hierarchy struct {
	Version Version
	// Dir is the hierarchy's mount: /sys/fs/cgroup (v2) or /sys/fs/cgroup/blkio (v1), under the root.
	Dir string
	// PressureDir is where io.pressure files are: Dir for v2, the unified hierarchy of a hybrid v1 host,
	// or "" when there is none.
	PressureDir string
}

// ErrNoIOAccounting means the host offers neither cgroup v2 with the io controller nor a v1 blkio
// hierarchy, so there is no per-cgroup I/O to report.
var ErrNoIOAccounting = errors.New("no per-cgroup I/O accounting: neither cgroup v2 with the io controller nor a cgroup v1 blkio hierarchy")

// Detect looks below cgroupRoot (normally <root_path>/sys/fs/cgroup) for, in this order: a unified
// hierarchy offering the io controller, a v1 blkio hierarchy (with the hybrid layout's unified hierarchy
// for pressure), and a hybrid layout's unified hierarchy offering io.
func Detect(cgroupRoot string) (Hierarchy, error) {
	if hasController(cgroupRoot, "io") {
		return Hierarchy{Version: V2, Dir: cgroupRoot, PressureDir: cgroupRoot}, nil
	}
	blkio := filepath.Join(cgroupRoot, "blkio")
	if _, err := os.Stat(filepath.Join(blkio, BlkioBytesFile)); err == nil {
		h := Hierarchy{Version: V1, Dir: blkio}
		if unified := filepath.Join(cgroupRoot, "unified"); isUnified(unified) {
			h.PressureDir = unified
		}
		return h, nil
	}
	if unified := filepath.Join(cgroupRoot, "unified"); hasController(unified, "io") {
		return Hierarchy{Version: V2, Dir: unified, PressureDir: unified}, nil
	}
	return Hierarchy{}, fmt.Errorf("%s: %w", cgroupRoot, ErrNoIOAccounting)
}

func isUnified(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "cgroup.controllers"))
	return err == nil
}

// hasController reads the root's cgroup.controllers: the controllers its children can enable.
func hasController(dir, name string) bool {
	data, err := bounded.ReadFile(filepath.Join(dir, "cgroup.controllers"), bounded.Attr, nil)
	if err != nil {
		return false
	}
	for f := range bytes.FieldsSeq(data) {
		if string(f) == name {
			return true
		}
	}
	return false
}
