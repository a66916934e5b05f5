package cgroupio

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
)

// IDs maps every cgroup of the hierarchy mounted at dir (a v2 mount or a v1 controller's, such as
// /sys/fs/cgroup/blkio) to its path relative to dir ("/" the root, "/kubepods.slice/…"), keyed by the
// cgroup's id: the inode number of its directory, which is the kernfs node id a BPF program reads
// (cgroup->kn->id) on 64-bit kernels, unique for the boot. A cgroup removed during the walk is left
// out, not an error.
func IDs(dir string) (map[uint64]string, error) {
	ids := map[uint64]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if isGone(err) && path != dir {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if isGone(err) {
				return fs.SkipDir
			}
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return errors.New("cgroupio: no inode number for " + path)
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		ids[st.Ino] = "/" + filepath.ToSlash(rel)
		if rel == "." {
			ids[st.Ino] = "/"
		}
		return nil
	})
	return ids, err
}
