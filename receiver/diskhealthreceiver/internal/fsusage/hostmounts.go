package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import (
	"path/filepath"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

// ReadHostMountInfo reads the host's mount table below root (root_path, "/" outside a container):
// <root>/proc/1/mountinfo, the host init's view (ViewInit), or where pid 1 cannot be read (hidepid, a
// non-root collector on some kernels) <root>/proc/self/mountinfo, the collector's own (ViewSelf). A
// seq_file: one read holds a page of it, so it is read to the end (bounded.ReadRecords). On failure
// the error is the one of pid 1's table.
func ReadHostMountInfo(root string) ([]byte, View, error) {
	if root == "" {
		root = "/"
	}
	b, err := bounded.ReadRecords(filepath.Join(root, "proc", "1", "mountinfo"), bounded.Mountinfo, nil)
	if err == nil {
		return b, ViewInit, nil
	}
	if b2, err2 := bounded.ReadRecords(filepath.Join(root, "proc", "self", "mountinfo"), bounded.Mountinfo, nil); err2 == nil {
		return b2, ViewSelf, nil
	}
	return b, ViewInit, err
}
