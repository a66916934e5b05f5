package dm

import (
	"errors"
	"io/fs"
	"strings"
)

// SplitLVMName splits an LVM dm name "vg-lv[-layer]" into VG and LV. LVM
// doubles every '-' inside a VG or LV name, so the separator is the first
// single '-'. ok is false when the name has no single '-'.
func SplitLVMName(name string) (vg, lv string, ok bool) {
	for i := 0; i < len(name); i++ {
		if name[i] != '-' {
			continue
		}
		if i+1 < len(name) && name[i+1] == '-' {
			i++
			continue
		}
		if i == 0 || i == len(name)-1 {
			return "", "", false
		}
		un := func(s string) string { return strings.ReplaceAll(s, "--", "-") }
		return un(name[:i]), un(name[i+1:]), true
	}
	return "", "", false
}

// UUIDInfo is what a dm uuid says about its owner.
type UUIDInfo struct {
	// Owner is the uuid's prefix: "LVM", "mpath", "CRYPT", "part1", ...;
	// "" for a device without uuid.
	Owner string
	// For LVM: VGUUID and LVUUID (32 characters each) and Layer, the
	// internal-device suffix ("tpool", "tdata", "tmeta", "real", "cow",
	// ...; "" for the LV itself).
	VGUUID, LVUUID, Layer string `json:",omitempty"`
}

// ParseUUID parses a dm uuid such as
// "LVM-<32 vg chars><32 lv chars>-tpool" or "mpath-3600...".
func ParseUUID(uuid string) UUIDInfo {
	owner, rest, ok := strings.Cut(uuid, "-")
	if !ok {
		return UUIDInfo{Owner: uuid}
	}
	info := UUIDInfo{Owner: owner}
	if owner == "LVM" && len(rest) >= 64 {
		info.VGUUID, info.LVUUID = rest[:32], rest[32:64]
		info.Layer = strings.TrimPrefix(rest[64:], "-")
	}
	return info
}

// ReadSysfsName reads block/<kernelName>/dm/{name,uuid} from sys (rooted
// at /sys): the names of a dm device without any privilege.
func ReadSysfsName(sys fs.FS, kernelName string) (name, uuid string, err error) {
	dir := "block/" + kernelName + "/dm/"
	if !strings.HasPrefix(kernelName, "dm-") || !fs.ValidPath(dir+"name") || strings.Contains(kernelName, "/") {
		return "", "", errors.New("not a dm device name: " + kernelName)
	}
	b, err := fs.ReadFile(sys, dir+"name")
	if err != nil {
		return "", "", err
	}
	u, err := fs.ReadFile(sys, dir+"uuid")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return strings.TrimSpace(string(b)), "", err
	}
	return strings.TrimSpace(string(b)), strings.TrimSpace(string(u)), nil
}
