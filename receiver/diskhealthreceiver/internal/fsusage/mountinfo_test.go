package fsusage

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
)

func TestParseMountInfoLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Mount
	}{
		{
			name: "proc(5) example",
			line: "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue",
			want: Mount{ID: 36, ParentID: 35, Major: 98, Minor: 0, Root: "/mnt1", MountPoint: "/mnt2", Path: "/mnt2",
				FSType: "ext3", Source: "/dev/root", Class: ClassLocal},
		},
		{
			name: "no optional fields",
			line: "21 26 0:20 / /proc rw,relatime - proc proc rw",
			want: Mount{ID: 21, ParentID: 26, Major: 0, Minor: 20, Root: "/", MountPoint: "/proc", Path: "/proc",
				FSType: "proc", Source: "proc", Class: ClassVirtual},
		},
		{
			name: "several optional fields",
			line: "100 99 8:1 / /a rw shared:5 master:3 propagate_from:2 unbindable - xfs /dev/sda1 rw",
			want: Mount{ID: 100, ParentID: 99, Major: 8, Minor: 1, Root: "/", MountPoint: "/a", Path: "/a",
				FSType: "xfs", Source: "/dev/sda1", Class: ClassLocal},
		},
		{
			name: "mount read-only",
			line: "1 0 8:1 / /ro ro,relatime - ext4 /dev/sda1 rw",
			want: Mount{ID: 1, Major: 8, Minor: 1, Root: "/", MountPoint: "/ro", Path: "/ro", FSType: "ext4",
				Source: "/dev/sda1", ReadOnly: true, MountRO: true},
		},
		{
			name: "superblock read-only",
			line: "1 0 8:1 / /ro rw,relatime - ext4 /dev/sda1 ro",
			want: Mount{ID: 1, Major: 8, Minor: 1, Root: "/", MountPoint: "/ro", Path: "/ro", FSType: "ext4",
				Source: "/dev/sda1", ReadOnly: true, SuperRO: true},
		},
		{
			name: "emergency_ro",
			line: "1 0 8:1 / /x rw - ext4 /dev/sda1 rw,emergency_ro",
			want: Mount{ID: 1, Major: 8, Minor: 1, Root: "/", MountPoint: "/x", Path: "/x", FSType: "ext4",
				Source: "/dev/sda1", ReadOnly: true, EmergencyRO: true, SuperRO: true},
		},
		{
			// ext4 after EXT4_IOC_SHUTDOWN, as 6.18 shows it: mount and superblock still rw.
			name: "ext4 shutdown",
			line: "47 27 7:2 / /x rw,relatime - ext4 /dev/loop2 rw,errors=remount-ro,shutdown",
			want: Mount{ID: 47, ParentID: 27, Major: 7, Minor: 2, Root: "/", MountPoint: "/x", Path: "/x", FSType: "ext4",
				Source: "/dev/loop2", Shutdown: true},
		},
		{
			name: "errors=remount-ro is not ro",
			line: "1 0 8:1 / /x rw - ext4 /dev/sda1 rw,errors=remount-ro",
			want: Mount{ID: 1, Major: 8, Minor: 1, Root: "/", MountPoint: "/x", Path: "/x", FSType: "ext4", Source: "/dev/sda1"},
		},
		{
			name: "project quotas: XFS enforced and accounting only, ext4; the user quota option is not one",
			line: "1 0 8:1 / /x rw - xfs /dev/sda1 rw,attr2,inode64,prjquota",
			want: Mount{ID: 1, Major: 8, Minor: 1, Root: "/", MountPoint: "/x", Path: "/x", FSType: "xfs", Source: "/dev/sda1", ProjectQuota: true},
		},
		{
			name: "project quota accounting only",
			line: "1 0 8:1 / /x rw - xfs /dev/sda1 rw,pqnoenforce",
			want: Mount{ID: 1, Major: 8, Minor: 1, Root: "/", MountPoint: "/x", Path: "/x", FSType: "xfs", Source: "/dev/sda1", ProjectQuota: true},
		},
		{
			name: "ext4 user quota",
			line: "1 0 8:1 / /x rw - ext4 /dev/sda1 rw,usrquota",
			want: Mount{ID: 1, Major: 8, Minor: 1, Root: "/", MountPoint: "/x", Path: "/x", FSType: "ext4", Source: "/dev/sda1"},
		},
		{
			name: "escapes",
			line: `1 0 8:1 /a\040b /m\011n\012o\134p rw - ext4 /dev/disk/by-label/x\040y rw`,
			want: Mount{ID: 1, Major: 8, Minor: 1, Root: "/a b", MountPoint: "/m\tn\no\\p", Path: "/m\tn\no\\p",
				FSType: "ext4", Source: "/dev/disk/by-label/x y"},
		},
		{
			name: "empty source",
			line: "67 22 0:50 / /mnt/empty rw,relatime shared:46 - tmpfs  rw,size=1024k",
			want: Mount{ID: 67, ParentID: 22, Major: 0, Minor: 50, Root: "/", MountPoint: "/mnt/empty", Path: "/mnt/empty",
				FSType: "tmpfs", Source: "", Class: ClassMemory},
		},
		{
			name: "fuse subtype",
			line: "45 38 0:45 / /home/a/r rw - fuse.sshfs a@h:/srv rw,user_id=1000",
			want: Mount{ID: 45, ParentID: 38, Major: 0, Minor: 45, Root: "/", MountPoint: "/home/a/r", Path: "/home/a/r",
				FSType: "fuse.sshfs", Source: "a@h:/srv", Class: ClassRemote},
		},
		{
			name: "btrfs subvolume",
			line: "31 29 0:35 /@home /home rw - btrfs /dev/nvme0n1p3 rw,ssd,subvolid=257,subvol=/@home",
			want: Mount{ID: 31, ParentID: 29, Major: 0, Minor: 35, Root: "/@home", MountPoint: "/home", Path: "/home",
				FSType: "btrfs", Source: "/dev/nvme0n1p3", subvolume: true},
		},
		{
			name: "btrfs subvolume, old kernel without the slash",
			line: "31 29 0:35 /@home /home rw - btrfs /dev/sda3 rw,subvol=@home",
			want: Mount{ID: 31, ParentID: 29, Major: 0, Minor: 35, Root: "/@home", MountPoint: "/home", Path: "/home",
				FSType: "btrfs", Source: "/dev/sda3", subvolume: true},
		},
		{
			name: "btrfs bind of a directory inside a subvolume",
			line: "38 29 0:35 /@var/www /srv/www rw - btrfs /dev/sda3 rw,subvolid=258,subvol=/@var",
			want: Mount{ID: 38, ParentID: 29, Major: 0, Minor: 35, Root: "/@var/www", MountPoint: "/srv/www", Path: "/srv/www",
				FSType: "btrfs", Source: "/dev/sda3"},
		},
		{
			name: "subvol option on another filesystem means nothing",
			line: "38 29 0:35 /x /y rw - ext4 /dev/sda3 rw,subvol=/x",
			want: Mount{ID: 38, ParentID: 29, Major: 0, Minor: 35, Root: "/x", MountPoint: "/y", Path: "/y",
				FSType: "ext4", Source: "/dev/sda3"},
		},
		{
			name: "nsfs root",
			line: "3 31 0:4 net:[4026532200] /run/netns/cni-1 rw shared:3 - nsfs nsfs rw",
			want: Mount{ID: 3, ParentID: 31, Major: 0, Minor: 4, Root: "net:[4026532200]", MountPoint: "/run/netns/cni-1",
				Path: "/run/netns/cni-1", FSType: "nsfs", Source: "nsfs", Class: ClassVirtual},
		},
		{
			name: "the separator is found by position, not by text",
			line: "1 0 8:1 - /x rw shared:1 - ext4 /dev/sda1 rw",
			want: Mount{ID: 1, Major: 8, Minor: 1, Root: "-", MountPoint: "/x", Path: "/x", FSType: "ext4", Source: "/dev/sda1"},
		},
		{
			name: "large device numbers",
			line: "1 0 4095:1048575 / /x rw - ext4 /dev/big rw",
			want: Mount{ID: 1, Major: 4095, Minor: 1048575, Root: "/", MountPoint: "/x", Path: "/x", FSType: "ext4", Source: "/dev/big"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMountInfo([]byte(tt.line + "\n"))
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, tt.want, got[0])
		})
	}
}

func TestParseMountInfoBadLines(t *testing.T) {
	good := "1 0 8:1 / / rw - ext4 /dev/sda1 rw"
	tests := []struct {
		line string
		want error
	}{
		{"1 0 8:1 / / rw ext4 /dev/sda1 rw", errNoSeparator},
		{"1 0 8:1 / - ext4 /dev/sda1 rw", errNoSeparator},
		{"1 0 8:1 /", errFieldCount},
		{"1 0 8:1 / /a rw -", errFieldCount},
		{"x 0 8:1 / /a rw - ext4 /dev/sda1 rw", errMountID},
		{"1 -1 8:1 / /a rw - ext4 /dev/sda1 rw", errParentID},
		{"1 0 8-1 / /a rw - ext4 /dev/sda1 rw", errMajorMinor},
		{"1 0 8:x / /a rw - ext4 /dev/sda1 rw", errMajorMinor},
		{"1 0 8:4294967296 / /a rw - ext4 /dev/sda1 rw", errMajorMinor},
		{"1 0 8:1 / a rw - ext4 /dev/sda1 rw", errMountPoint},
		{"1 0 8:1  /a rw - ext4 /dev/sda1 rw", errEmptyRoot},
		{"1 0 8:1 / /a rw -  /dev/sda1 rw", errEmptyFSType},
		{"1 0 8:1 / /a rw - ext4", errFieldCount},
		{"1 0 8:1 / /a rw - ext4 /dev/sda1", errSuperOptions},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			data := good + "\n" + tt.line + "\n\n" + strings.Replace(good, "/ / rw", "/ /b rw", 1)
			got, err := ParseMountInfo([]byte(data))
			require.Len(t, got, 2, "the good lines survive a bad one")
			assert.Equal(t, "/", got[0].MountPoint)
			assert.Equal(t, "/b", got[1].MountPoint)

			var perr *parseerr.Lines
			require.ErrorAs(t, err, &perr)
			assert.Equal(t, 1, perr.Count)
			require.Len(t, perr.Lines, 1)
			assert.Equal(t, 2, perr.Lines[0].Line)
			assert.Equal(t, "mountinfo", perr.Lines[0].File)
			assert.Equal(t, tt.line, perr.Lines[0].Value)
			require.ErrorIs(t, err, tt.want)
			assert.Contains(t, err.Error(), "mountinfo line 2 ")
		})
	}
}

func TestParseErrorKeepsFirstLines(t *testing.T) {
	data := strings.Repeat("garbage\n", 25) + "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
	got, err := ParseMountInfo([]byte(data))
	require.Len(t, got, 1)
	var perr *parseerr.Lines
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, 25, perr.Count)
	assert.Len(t, perr.Lines, parseerr.MaxLines)
	assert.Contains(t, err.Error(), "25 bad lines: mountinfo line 1 \"garbage\": too few fields; ")
	assert.Contains(t, err.Error(), "and 15 more")
	assert.ErrorIs(t, err, errFieldCount)
}

func TestParseLongLineTruncatedInError(t *testing.T) {
	line := "1 0 8:1 / /a rw " + strings.Repeat("x", 500)
	_, err := ParseMountInfo([]byte(line))
	var perr *parseerr.Lines
	require.ErrorAs(t, err, &perr)
	assert.Len(t, perr.Lines[0].Value, parseerr.MaxValue)
}

func TestParseEmpty(t *testing.T) {
	for _, data := range []string{"", "\n", "\n\n\n"} {
		got, err := ParseMountInfo([]byte(data))
		require.NoError(t, err)
		assert.Empty(t, got)
	}
}

func TestUnescape(t *testing.T) {
	tests := []struct{ in, want string }{
		{`plain`, "plain"},
		{`a\040b`, "a b"},
		{`\011\012\134`, "\t\n\\"},
		{`\134040`, `\040`}, // an escaped backslash is not the start of another escape
		{`\377`, "\xff"},
		{`\400`, `\400`}, // above a byte
		{`\08`, `\08`},   // not octal
		{`\04`, `\04`},   // too short
		{`end\`, `end\`},
		{`\\040`, `\ `},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, unescapeString([]byte(tt.in)), tt.in)
	}
}

func TestMountHelpers(t *testing.T) {
	m := Mount{Major: 259, Minor: 3, MountPoint: "/x", Root: "/"}
	assert.Equal(t, "259:3", m.MajorMinor())
	assert.Equal(t, "rw", m.Mode())
	m.ReadOnly = true
	assert.Equal(t, "ro", m.Mode())
	assert.Equal(t, MountKey{MountPoint: "/x", Major: 259, Minor: 3, Root: "/"}, m.Key())
}

func TestClassify(t *testing.T) {
	for fs, want := range map[string]FSClass{
		"ext4": ClassLocal, "xfs": ClassLocal, "btrfs": ClassLocal, "zfs": ClassLocal, "vfat": ClassLocal,
		"fuseblk": ClassLocal, "f2fs": ClassLocal, "bcachefs": ClassLocal, "somethingnew": ClassLocal,
		"tmpfs": ClassMemory, "ramfs": ClassMemory,
		"nfs": ClassRemote, "nfs4": ClassRemote, "cifs": ClassRemote, "smb3": ClassRemote, "fuse": ClassRemote,
		"fuse.sshfs": ClassRemote, "fuse.lxcfs": ClassRemote, "9p": ClassRemote, "virtiofs": ClassRemote, "ceph": ClassRemote,
		"proc": ClassVirtual, "sysfs": ClassVirtual, "cgroup": ClassVirtual, "cgroup2": ClassVirtual,
		"overlay": ClassVirtual, "squashfs": ClassVirtual, "devtmpfs": ClassVirtual, "nsfs": ClassVirtual,
		"autofs": ClassVirtual, "erofs": ClassVirtual,
	} {
		assert.Equal(t, want, Classify(fs), fs)
	}
	assert.Equal(t, "local", ClassLocal.String())
	assert.Equal(t, "memory", ClassMemory.String())
	assert.Equal(t, "remote", ClassRemote.String())
	assert.Equal(t, "virtual", ClassVirtual.String())
	assert.Equal(t, "unknown", FSClass(99).String())
}

// TestParseMountInfoSanitisesSourceAndType: a mount source or filesystem type with non-UTF-8 bytes or
// control characters leaves the parser valid, escaped and capped (they become system.device and
// system.filesystem.type); the mount point stays raw for statfs.
func TestParseMountInfoSanitisesSourceAndType(t *testing.T) {
	line := "36 35 8:1 / /mnt/\xff rw - ext4\x01 /dev/s\xffd\\011a" + strings.Repeat("x", 2000) + " rw\n"
	mounts, err := ParseMountInfo([]byte(line))
	require.NoError(t, err)
	require.Len(t, mounts, 1)
	m := mounts[0]
	assert.Equal(t, `ext4\x01`, m.FSType)
	assert.True(t, utf8.ValidString(m.Source))
	assert.True(t, strings.HasPrefix(m.Source, "/dev/s\uFFFDd\\x09a"), "%q", m.Source)
	assert.Len(t, m.Source, sanitize.Cap(sanitize.MountSource))
	assert.Equal(t, "/mnt/\xff", m.MountPoint, "statfs needs the raw bytes")
}
