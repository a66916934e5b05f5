package blockdev

import (
	"cmp"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
)

var (
	reNVMeNamespace  = regexp.MustCompile(`^nvme(\d+)n(\d+)$`)
	reNVMeController = regexp.MustCompile(`^nvme\d+$`)
)

// nvmeNamespace names the controller and the NSID of an NVMe namespace block device (nvme0n1);
// "" and 0 for any other disk. The namespace's "device" link points at its controller or, for a
// multipath head, at its subsystem, whose first controller is taken; the number in the kernel name
// is the last resort. The NSID is the nsid attribute, else the number in the name (the kernel's
// instance number, equal to the NSID on single-path systems).
func (s sysfs) nvmeNamespace(name string, e entries, errs *[]error) (ctrl string, nsid uint32) {
	m := reNVMeNamespace.FindStringSubmatch(name)
	if m == nil {
		return "", 0
	}
	ctrl = "nvme" + m[1]
	if e&hasDevice != 0 {
		if target, err := fs.ReadLink(s.fsys, "class/block/"+sysName(name)+"/device"); err == nil {
			if c := s.controllerOf(path.Base(target)); c != "" {
				ctrl = c
			}
		}
	}
	if e&hasNSID != 0 {
		if v, ok := s.number(name, "class/block/"+sysName(name)+"/nsid", 1<<32-1, errs); ok && v > 0 {
			return ctrl, uint32(v)
		}
	}
	if v, err := strconv.ParseUint(m[2], 10, 32); err == nil && v > 0 {
		return ctrl, uint32(v)
	}
	return ctrl, 1
}

// controllerOf is the controller a namespace's device link names: the controller itself, or the
// first controller of a subsystem (nvme-subsysN), "" when neither.
func (s sysfs) controllerOf(base string) string {
	if reNVMeController.MatchString(base) {
		return base
	}
	if !reNVMeSubsystem.MatchString(base) {
		return ""
	}
	names := SubsystemControllers(s.fsys, base)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

var reNVMeSubsystem = regexp.MustCompile(`^nvme-subsys\d+$`)

// SubsystemControllers lists the controllers the kernel put in NVMe subsystem sub (nvme-subsys1: its
// links class/nvme-subsystem/<sub>/nvmeN), in number order; the first is the one a multipath head's
// namespaces name. fsys is rooted at sysfs. nil when there is none or the listing fails.
func SubsystemControllers(fsys fs.FS, sub string) []string {
	ents, err := fs.ReadDir(fsys, "class/nvme-subsystem/"+sub)
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range ents {
		if reNVMeController.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	slices.SortFunc(names, compareControllers)
	return names
}

// compareControllers orders controller names by number (nvme2 before nvme10).
func compareControllers(a, b string) int {
	na, _ := strconv.Atoi(a[len("nvme"):])
	nb, _ := strconv.Atoi(b[len("nvme"):])
	return cmp.Or(cmp.Compare(na, nb), cmp.Compare(a, b))
}

// CompareNamespaces orders the namespaces of one controller: by NSID, then by name. The first one
// names the controller (ControllerID).
func CompareNamespaces(a, b *Identity) int {
	return cmp.Or(cmp.Compare(a.NSID, b.NSID), cmp.Compare(a.Name, b.Name))
}

// ControllerID is the hw.id of an NVMe controller: the DiskID of its first namespace by
// CompareNamespaces (usually NSID 1), the hw.id that namespace's own I/O carries too. It stays the
// same while that namespace exists, whatever other namespaces come and go. The SMART source reports
// the controller under it and the I/O source puts it on every namespace as hw.parent, so each
// namespace's I/O joins the controller's health. "" for no namespace.
func ControllerID(namespaces []*Identity) string {
	if len(namespaces) == 0 {
		return ""
	}
	first := slices.MinFunc(namespaces, CompareNamespaces)
	return DiskID(first)
}

// setParents fills HWParent of every NVMe namespace in ids (replacing a changed identity by a copy:
// published identities are never modified).
func setParents(ids map[string]*Identity) {
	var ctrls map[string][]*Identity
	for _, id := range ids {
		if id.Controller != "" {
			if ctrls == nil {
				ctrls = map[string][]*Identity{}
			}
			ctrls[id.Controller] = append(ctrls[id.Controller], id)
		}
	}
	for _, ns := range ctrls {
		parent := ControllerID(ns)
		for _, id := range ns {
			if id.HWParent != parent {
				cp := *id
				cp.HWParent = parent
				ids[id.Name] = &cp
			}
		}
	}
}
