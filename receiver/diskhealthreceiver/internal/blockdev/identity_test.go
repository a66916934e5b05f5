package blockdev

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
)

var (
	ataDisk = hardware{Model: "QEMU HARDDISK", Serial: "QM00001", Firmware: "2.5+",
		WWN: "t10.ATA     QEMU HARDDISK                           QM00001", Rotational: 1}
	nvmeDisk = hardware{Model: "Samsung SSD 980 PRO 1TB", Serial: "S5GXNF0R123456K", Firmware: "5B2QGXA7",
		WWN: "eui.002538b111b2c3d4", Rotational: 0}
	virtioDisk = hardware{Rotational: 1}
	ccissDisk  = hardware{Model: "LOGICAL VOLUME", Rotational: 1}
)

func withHW(id Identity, h hardware) Identity {
	id.setHardware(h)
	return id
}

// wantHost is what buildHost's devices must read as.
func wantHost() map[string]Identity {
	return map[string]Identity{
		"sda":  withHW(Identity{Name: "sda", Major: 8, Minor: 0, Class: ClassDisk, Size: 8388608 * 512}, ataDisk),
		"sda1": withHW(Identity{Name: "sda1", Major: 8, Minor: 1, Class: ClassPartition, Parent: "sda", Size: 2048000 * 512}, ataDisk),
		"sda2": withHW(Identity{Name: "sda2", Major: 8, Minor: 2, Class: ClassPartition, Parent: "sda", Size: 6338560 * 512}, ataDisk),
		"sdb": {Name: "sdb", Major: 8, Minor: 16, Class: ClassDisk, Size: 7814037168 * 512,
			Model: "ST4000NM0023", Firmware: "GS0F", WWN: "naa.5000c500a1b2c3d4", Rotational: 1},
		"nvme0n1":   withHW(Identity{Name: "nvme0n1", Major: 259, Minor: 0, Class: ClassDisk, Size: 1953525168 * 512, Controller: "nvme0", NSID: 1}, nvmeDisk),
		"nvme0n1p1": withHW(Identity{Name: "nvme0n1p1", Major: 259, Minor: 1, Class: ClassPartition, Parent: "nvme0n1", Size: 1048576 * 512}, nvmeDisk),
		"dm-0":      {Name: "dm-0", Major: 253, Minor: 0, Class: ClassDM, DMName: "vg0-root", Size: 41943040 * 512, Rotational: 0},
		"md0":       {Name: "md0", Major: 9, Minor: 0, Class: ClassMD, Size: 16777216 * 512, Rotational: 1},
		"md0p1":     {Name: "md0p1", Major: 259, Minor: 2, Class: ClassPartition, Parent: "md0", Size: 16000000 * 512, Rotational: 1},
		"loop0":     {Name: "loop0", Major: 7, Minor: 0, Class: ClassLoop, Size: 131072 * 512, Rotational: 1},
		"loop1":     {Name: "loop1", Major: 7, Minor: 1, Class: ClassLoop, Size: 0, Rotational: 1},
		"zram0":     {Name: "zram0", Major: 252, Minor: 0, Class: ClassRAM, Size: 16777216 * 512, Rotational: 0},
		"ram0":      {Name: "ram0", Major: 1, Minor: 0, Class: ClassRAM, Size: 131072 * 512, Rotational: 0},
		"nbd0":      {Name: "nbd0", Major: 43, Minor: 0, Class: ClassOther, Size: 0, Rotational: 0},
		"vda":       withHW(Identity{Name: "vda", Major: 254, Minor: 0, Class: ClassDisk, Size: 20971520 * 512}, virtioDisk),
		"vda1":      withHW(Identity{Name: "vda1", Major: 254, Minor: 1, Class: ClassPartition, Parent: "vda", Size: 20969472 * 512}, virtioDisk),
		"vdb": {Name: "vdb", Major: 254, Minor: 16, Class: ClassDisk, Size: 2097152 * 512,
			Serial: "data-disk-7", Rotational: 1},
		"cciss/c0d0":   withHW(Identity{Name: "cciss/c0d0", Major: 104, Minor: 0, Class: ClassDisk, Size: 1000 * 512}, ccissDisk),
		"cciss/c0d0p1": withHW(Identity{Name: "cciss/c0d0p1", Major: 104, Minor: 1, Class: ClassPartition, Parent: "cciss/c0d0", Size: 900 * 512}, ccissDisk),
	}
}

func TestReadIdentity(t *testing.T) {
	s := buildHost(t)
	want := wantHost()
	for _, st := range hostDevs() {
		t.Run(st.Name, func(t *testing.T) {
			got, err := ReadIdentity(s.root, st.Name, st.Major, st.Minor)
			require.NoError(t, err)
			assert.Equal(t, want[st.Name], got)
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		e    entries
		want Class
	}{
		{"sda1", hasPartition | hasSize, ClassPartition},
		{"loop0p1", hasPartition, ClassPartition},
		{"dm-3", hasDM | hasQueue, ClassDM},
		{"md127", hasMD | hasQueue, ClassMD},
		{"loop7", hasQueue, ClassLoop},
		{"loop0", hasLoop | hasQueue, ClassLoop},
		{"loopy", hasDevice, ClassDisk},
		{"ram15", hasQueue, ClassRAM},
		{"zram0", hasQueue, ClassRAM},
		{"zram", hasQueue, ClassOther},
		{"ramdisk", hasQueue, ClassOther},
		{"sr0", hasDevice | hasQueue, ClassDisk},
		{"nbd0", hasQueue, ClassOther},
		{"nvme0n1", hasDevice | hasWWID, ClassDisk},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, classify(tt.name, tt.e), tt.name)
	}
}

func TestReadIdentityBadAttributes(t *testing.T) {
	s := newFakeSys(t)
	// A directory where the model file should be (stands in for EACCES/EIO:
	// the tests run as root, where chmod 000 does not stop reads).
	s.mkdir(ataDev + "/model/")
	s.write(ataDev+"/rev", "1.0\n")
	s.write(ataDev+"/wwid", "naa.5000000000000001\n")
	s.write(ataDev+"/vpd_pg80", "\x00\x83\x00\x04abcd") // wrong page code
	s.blockDev(ataDev+"/block/sda", ataDev, map[string]string{"size": "12x\n", "queue/rotational": "banana\n"})

	got, err := ReadIdentity(s.root, "sda", 8, 0)
	assert.Equal(t, Identity{Name: "sda", Major: 8, Minor: 0, Class: ClassDisk,
		Firmware: "1.0", WWN: "naa.5000000000000001", Rotational: -1}, got, "readable fields are still filled")

	var attrErrs []*AttrError
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ae *AttrError
		require.ErrorAs(t, e, &ae, "%v", e)
		attrErrs = append(attrErrs, ae)
	}
	paths := map[string]bool{}
	for _, ae := range attrErrs {
		assert.Equal(t, "sda", ae.Device)
		paths[ae.Path] = true
	}
	dev := filepath.Join(s.root, "class/block/sda")
	assert.Equal(t, map[string]bool{
		filepath.Join(dev, "size"):             true,
		filepath.Join(dev, "queue/rotational"): true,
		filepath.Join(dev, "device/model"):     true,
		filepath.Join(dev, "device/vpd_pg80"):  true,
	}, paths)
	require.ErrorContains(t, err, "device sda: "+filepath.Join(dev, "queue/rotational")+`: not a number up to 1: "banana"`)
	assert.ErrorContains(t, err, "device sda: "+filepath.Join(dev, "device/model")+": not a regular file")
}

func TestReadIdentityGarbageText(t *testing.T) {
	s := newFakeSys(t)
	s.write(nvmeCtrl+"/model", "Bad\x01Model\n")
	s.write(nvmeCtrl+"/serial", "\xff\xfe\n")
	s.write(nvmeCtrl+"/firmware_rev", "1.0\n")
	s.blockDev(nvmeCtrl+"/nvme0n1", nvmeCtrl, map[string]string{"size": "8\n", "queue/rotational": "0\n"})
	got, err := ReadIdentity(s.root, "nvme0n1", 259, 0)
	got.Controller, got.NSID = "", 0 // nvme_test.go checks these
	require.Error(t, err)
	require.ErrorContains(t, err, "device/model: not printable text")
	require.ErrorContains(t, err, "device/serial: not printable text")
	assert.Equal(t, Identity{Name: "nvme0n1", Major: 259, Class: ClassDisk, Firmware: "1.0", Size: 4096, Rotational: 0}, got)
}

func TestReadIdentityVPDPage(t *testing.T) {
	tests := []struct {
		name, page, want, wantErr string
	}{
		{"padded serial", vpd80("  WD-WCC4E1234567  "), "WD-WCC4E1234567", ""},
		{"empty serial", vpd80(""), "", ""},
		{"too short", "\x00\x80", "", "not a VPD page 0x80"},
		{"length past end", "\x00\x80\x00\x10abc", "", "VPD page length 16 exceeds the 3 bytes read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newFakeSys(t)
			s.write(ataDev+"/vpd_pg80", tt.page)
			s.blockDev(ataDev+"/block/sda", ataDev, map[string]string{"queue/rotational": "1\n"})
			got, err := ReadIdentity(s.root, "sda", 8, 0)
			assert.Equal(t, tt.want, got.Serial)
			if tt.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tt.wantErr)
			}
		})
	}
}

func TestReadIdentityMissingDevice(t *testing.T) {
	s := buildHost(t)
	got, err := ReadIdentity(s.root, "sdz", 8, 400)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, "device sdz: "+filepath.Join(s.root, "class/block/sdz"))
	assert.Equal(t, Identity{Name: "sdz", Major: 8, Minor: 400, Class: ClassOther, Rotational: -1}, got)

	_, err = ReadIdentity(s.root, "..", 8, 400)
	require.ErrorContains(t, err, "not a valid device name")
}

func TestReadIdentityPartitionOfUnreadableDisk(t *testing.T) {
	s := buildHost(t)
	s.remove("class/block/sda") // the disk's entry vanished: the partition still reads
	got, err := ReadIdentity(s.root, "sda1", 8, 1)
	require.ErrorContains(t, err, "device sda: ")
	assert.Equal(t, Identity{Name: "sda1", Major: 8, Minor: 1, Class: ClassPartition, Parent: "sda", Size: 2048000 * 512, Rotational: -1}, got)
}

func TestReadIdentityRealSysfs(t *testing.T) {
	data, err := os.ReadFile("/proc/diskstats")
	if err != nil {
		t.Skip("SKIPPED: no /proc/diskstats here")
	}
	var p diskstats.Parser
	stats, err := p.Parse(data, nil)
	require.NoError(t, err)
	require.NotEmpty(t, stats)
	for _, st := range stats {
		id, err := ReadIdentity("/sys", st.DeviceName, st.MajorNumber, st.MinorNumber)
		require.NoError(t, err, st.DeviceName)
		assert.NotEqual(t, ClassOther, id.Class, "%+v", id)
	}
}

// einvalFS answers EINVAL for one file, as sysfs does for an attribute without a value.
type einvalFS struct {
	fs.FS
	path string
}

func (f einvalFS) Open(name string) (fs.File, error) {
	if name == f.path {
		return nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EINVAL}
	}
	return f.FS.Open(name)
}

func TestReadIdentityEINVALIsAbsent(t *testing.T) {
	s := newFakeSys(t)
	s.write(ataDev+"/model", "QEMU HARDDISK\n")
	s.write(ataDev+"/wwid", "unreadable on the real kernel\n")
	s.blockDev(ataDev+"/block/sdc", ataDev, map[string]string{"size": "131072\n"})
	sys := sysfs{root: s.root, fsys: einvalFS{FS: os.DirFS(s.root), path: "class/block/sdc/device/wwid"}}
	id, errs := sys.own("sdc", 8, 32)
	assert.Empty(t, errs, "an attribute the kernel cannot show is absent, not an error")
	assert.Equal(t, "QEMU HARDDISK", id.Model)
	assert.Empty(t, id.WWN)
}

// TestReadIdentityCapsLongText: a 60 KB sysfs model is cut to the model cap (it would otherwise be a
// 60 KB hw.model on every resource, every scrape), and hw.id built from it stays within its cap. (Past
// bounded.Attr, 64 KiB, an attribute is an error naming it: the kernel's own bound is a page.)
func TestReadIdentityCapsLongText(t *testing.T) {
	s := newFakeSys(t)
	s.write(nvmeCtrl+"/model", strings.Repeat("M", 60<<10)+"\n")
	s.write(nvmeCtrl+"/serial", strings.Repeat("S", 60<<10)+"\n")
	s.write(nvmeCtrl+"/firmware_rev", "1.0\u0085\n")
	s.blockDev(nvmeCtrl+"/nvme0n1", nvmeCtrl, map[string]string{"size": "8\n", "queue/rotational": "0\n"})
	got, err := ReadIdentity(s.root, "nvme0n1", 259, 0)
	require.NoError(t, err)
	assert.Equal(t, sanitize.String(sanitize.Model, strings.Repeat("M", 60<<10)), got.Model)
	assert.Len(t, got.Model, sanitize.Cap(sanitize.Model))
	assert.Equal(t, sanitize.String(sanitize.Serial, strings.Repeat("S", 60<<10)), got.Serial)
	assert.Equal(t, `1.0\u0085`, got.Firmware, "a C1 control character is escaped")
	id := DiskID(&got)
	assert.Equal(t, got.Model+"_"+got.Serial, id)
	assert.LessOrEqual(t, len(id), sanitize.Cap(sanitize.HWID))
	wide := Identity{WWN: strings.Repeat("w", 2000)}
	assert.Len(t, DiskID(&wide), sanitize.Cap(sanitize.HWID))
}

// A device that cannot discard or has no volatile write cache says so; a partition carries its disk's;
// without the attributes (older fixtures, kernels without write_cache) nothing is assumed.
func TestReadIdentityDiscardAndWriteCache(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		attrs                   map[string]string
		noDiscard, writeThrough bool
		wantErr                 string
	}{
		{name: "capable", attrs: map[string]string{"queue/discard_max_bytes": "2199023255040\n", "queue/write_cache": "write back\n"}},
		{name: "neither", attrs: map[string]string{"queue/discard_max_bytes": "0\n", "queue/write_cache": "write through\n"}, noDiscard: true, writeThrough: true},
		{name: "absent", attrs: map[string]string{}},
		{name: "garbage", attrs: map[string]string{"queue/discard_max_bytes": "lots\n", "queue/write_cache": "write sideways\n"},
			wantErr: `queue/write_cache: neither "write back" nor "write through": "write sideways"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeSys(t)
			attrs := map[string]string{"queue/rotational": "1\n"}
			for k, v := range tc.attrs {
				attrs[k] = v
			}
			s.blockDev(ataDev+"/block/sda", ataDev, attrs)
			s.blockDev(ataDev+"/block/sda/sda1", "", map[string]string{"partition": "1\n"})
			got, err := ReadIdentity(s.root, "sda", 8, 0)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.ErrorContains(t, err, `queue/discard_max_bytes: not a number`)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.noDiscard, got.NoDiscard)
			assert.Equal(t, tc.writeThrough, got.WriteThrough)
			part, _ := ReadIdentity(s.root, "sda1", 8, 1)
			assert.Equal(t, tc.noDiscard, part.NoDiscard, "a partition carries its disk's")
			assert.Equal(t, tc.writeThrough, part.WriteThrough)
		})
	}
}
