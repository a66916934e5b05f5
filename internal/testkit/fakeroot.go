package testkit

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Root is a fake root_path: files and symbolic links under a directory of the test's own, laid out as
// the kernel lays out /proc and /sys, so that every source runs against it without root.
type Root struct {
	t   testing.TB
	Dir string
}

// NewRoot returns an empty Root in a temporary directory removed when the test ends.
func NewRoot(t testing.TB) *Root {
	return &Root{t: t, Dir: t.TempDir()}
}

// RootAt returns a Root over the existing directory dir.
func RootAt(t testing.TB, dir string) *Root {
	return &Root{t: t, Dir: dir}
}

// Path is rel's path inside the root.
func (r *Root) Path(rel string) string { return filepath.Join(r.Dir, rel) }

// Write writes content to rel, making its directories.
func (r *Root) Write(rel, content string) {
	r.t.Helper()
	p := r.Path(rel)
	require.NoError(r.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(r.t, os.WriteFile(p, []byte(content), 0o644))
}

// Link makes rel a symbolic link to target (both root-relative); the link is relative, as sysfs's
// are, so the tree means the same wherever it lies.
func (r *Root) Link(rel, target string) {
	r.t.Helper()
	p := r.Path(rel)
	require.NoError(r.t, os.MkdirAll(filepath.Dir(p), 0o755))
	rt, err := filepath.Rel(filepath.Dir(p), r.Path(target))
	require.NoError(r.t, err)
	require.NoError(r.t, os.Symlink(rt, p))
}

// Disk is a whole disk as sysfs shows it.
type Disk struct {
	Name         string
	Major, Minor uint32
	// Dir is the disk's directory, root-relative: "sys/devices/…/block/vda", or the controller's
	// directory and the name for NVMe ("sys/devices/…/nvme/nvme0/nvme0n1").
	Dir string
	// Device is the directory the disk's device link leads to (its parent, which holds model, serial,
	// vendor …); none when empty.
	Device string
	// Files are written into Dir ("size", "queue/rotational", "wwid" …), DeviceFiles into Device.
	Files, DeviceFiles map[string]string
}

// Disk lays d out with the links the kernel makes: /sys/block/<name>, /sys/class/block/<name> and
// /sys/dev/block/<major>:<minor> lead to its directory, which holds dev and a device link.
func (r *Root) Disk(d Disk) {
	r.t.Helper()
	r.Write(d.Dir+"/dev", fmt.Sprintf("%d:%d\n", d.Major, d.Minor))
	for rel, content := range d.Files {
		r.Write(d.Dir+"/"+rel, content)
	}
	if d.Device != "" {
		for rel, content := range d.DeviceFiles {
			r.Write(d.Device+"/"+rel, content)
		}
		r.Link(d.Dir+"/device", d.Device)
	}
	r.Link("sys/block/"+d.Name, d.Dir)
	r.Link("sys/class/block/"+d.Name, d.Dir)
	r.Link(fmt.Sprintf("sys/dev/block/%d:%d", d.Major, d.Minor), d.Dir)
}

// Partition lays out partition number of the disk whose directory is diskDir, reachable through
// /sys/class/block/<name> and /sys/dev/block/<major>:<minor> (it has no /sys/block entry).
func (r *Root) Partition(diskDir, name string, major, minor uint32, number int, size uint64) {
	r.t.Helper()
	dir := diskDir + "/" + name
	r.Write(dir+"/dev", fmt.Sprintf("%d:%d\n", major, minor))
	r.Write(dir+"/partition", fmt.Sprintf("%d\n", number))
	r.Write(dir+"/size", fmt.Sprintf("%d\n", size))
	r.Link("sys/class/block/"+name, dir)
	r.Link(fmt.Sprintf("sys/dev/block/%d:%d", major, minor), dir)
}

// Encoded is how a ':' is written in a committed fixture name. A Go module zip refuses any file whose
// path holds ':' (so would every user's `go get` of this module), while sysfs names are full of them
// (8:1, pci0000:00, target0:0:0): fixture trees are committed with each ':' written %3A, and CopyTree
// restores them.
const Encoded = "%3A"

// RealName is a committed fixture name (or symbolic link target) under its real name.
func RealName(s string) string { return strings.ReplaceAll(s, Encoded, ":") }

// CopyTree copies the directory src (a fixture tree) to rel inside the root, under real names (see
// Encoded); edit, when not nil, may change each file's content on the way (its name is the path
// inside src, as committed).
func (r *Root) CopyTree(src, rel string, edit func(name string, data []byte) []byte) {
	r.t.Helper()
	dst := r.Path(rel)
	require.NoError(r.t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, RealName(name))
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(RealName(target), to)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if edit != nil {
			data = edit(name, data)
		}
		return os.WriteFile(to, data, 0o644)
	}))
}
